//! API server warnings (the `Warning` response header: deprecated APIs, ignored fields,
//! policy warnings) returned while applying, collected so the BundleDeployment can
//! report them, as the RukPak epic asks.
//!
//! kube's client runs requests in a buffer task, so warnings cannot be tied to a caller
//! through task-local state; instead each apply gets a client whose response layer writes
//! into a sink owned by that apply.

use std::sync::{Arc, Mutex, PoisonError};

use kube::Client;
use kube::client::{ClientBuilder, DynBody};

/// Warnings collected by one client.
#[derive(Debug, Clone, Default)]
pub struct Warnings(Arc<Mutex<Vec<String>>>);

impl Warnings {
    /// The distinct warnings seen so far, in arrival order.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn push(&self, warning: String) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !all.contains(&warning) {
            all.push(warning);
        }
    }
}

/// A client built from `config` that records every warning the API server returns.
pub fn client_recording_warnings(config: kube::Config) -> Result<(Client, Warnings), kube::Error> {
    let warnings = Warnings::default();
    let sink = warnings.clone();
    let layer =
        tower::util::MapResponseLayer::new(move |response: http::Response<Box<DynBody>>| {
            for value in response.headers().get_all(http::header::WARNING) {
                if let Ok(text) = value.to_str() {
                    sink.push(warning_text(text));
                }
            }
            response
        });
    let client = ClientBuilder::try_from(config)?.with_layer(&layer).build();
    Ok((client, warnings))
}

/// The message of a `Warning` header value: `299 - "text"` becomes `text`.
fn warning_text(header: &str) -> String {
    let mut parts = header.splitn(3, ' ');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(code), Some(_agent), Some(text))
            if code.len() == 3 && code.chars().all(|c| c.is_ascii_digit()) =>
        {
            text.trim().trim_matches('"').replace("\\\"", "\"")
        }
        _ => header.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_reduced_to_their_text() {
        assert_eq!(
            warning_text(r#"299 - "widgets.example.com/v1 Widget is deprecated""#),
            "widgets.example.com/v1 Widget is deprecated"
        );
        assert_eq!(warning_text("just text"), "just text");
    }

    #[test]
    fn repeated_warnings_are_kept_once() {
        let warnings = Warnings::default();
        warnings.push("a".into());
        warnings.push("a".into());
        warnings.push("b".into());
        assert_eq!(warnings.take(), ["a", "b"]);
        assert!(warnings.take().is_empty());
    }
}
