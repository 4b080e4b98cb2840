//! Unpacking any source: the denied-network check, then the source's own unpacker.
//!
//! [`Unpacker`] is declared in [`crate::source`], where callers find it. Its `unpack` lives
//! here because it returns the crate-wide [`Error`], which wraps the errors of every source:
//! defined in `source`, it would make `source` and `error` depend on each other.

use crate::error::Error;
use crate::source::{Source, Unpacked, Unpacker, configmap, egress, git, http, image};

impl Unpacker {
    /// Fetches and normalises `source`. A source whose host is in a denied network is
    /// refused before any connection.
    pub async fn unpack(&self, source: &Source) -> Result<Unpacked, Error> {
        let host = match source {
            Source::Image(image) => Some(egress::image_host(&image.reference)),
            Source::Git(git) => egress::url_host(&git.repository),
            Source::Http(http) => egress::url_host(&http.url),
            Source::ConfigMaps(_) => None,
        };
        if let Some((host, port)) = host {
            self.options()
                .denied_networks
                .check_host(&host, port)
                .await?;
        }
        Ok(match source {
            Source::Image(image) => image::unpack(image, self.options()).await?,
            Source::Git(git) => git::unpack(git, self.options()).await?,
            Source::Http(http) => http::unpack(http, self.options()).await?,
            Source::ConfigMaps(config_maps) => {
                configmap::unpack(config_maps, &self.options().limits)?
            }
        })
    }
}
