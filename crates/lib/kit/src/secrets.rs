//! Reading a Secret's data as plain bytes, as the certificate decisions take it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Secret;

/// The Secret's `data`, key by key, as bytes (empty when it has none).
pub fn data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    secret
        .data
        .iter()
        .flatten()
        .map(|(key, value)| (key.clone(), value.0.clone()))
        .collect()
}
