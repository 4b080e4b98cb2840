//! Rendering errors for people: conditions, Events and logs need the whole cause chain
//! on one line, without repeating a cause its wrapper already quotes.

/// `err` followed by each source not already contained in the text so far, joined by
/// `": "`.
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = String::new();
    let mut next = Some(err);
    while let Some(cause) = next {
        if let Some(text) = describe(cause)
            && !message.contains(&text)
        {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
        next = cause.source();
    }
    message
}

/// What one link of a chain says, or `None` when the next link says it better. kube's
/// `Error::Api` prints the API server's Status with Rust `Debug` formatting; its source
/// is that Status, whose own text is the server's sentence.
fn describe(err: &(dyn std::error::Error + 'static)) -> Option<String> {
    match err.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(_)) => None,
        _ => Some(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read Bundle b")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("connection refused")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("failed to apply: connection refused")]
    struct Quoting(#[source] Inner);

    #[test]
    fn causes_are_appended_once() {
        assert_eq!(
            error_chain(&Outer(Inner)),
            "failed to read Bundle b: connection refused"
        );
        assert_eq!(
            error_chain(&Quoting(Inner)),
            "failed to apply: connection refused"
        );
    }

    #[test]
    fn api_errors_read_as_the_servers_sentence_without_debug_output() {
        let status = kube::core::Status::failure(
            "clusterroles.rbac.authorization.k8s.io \"x\" is forbidden: User \"u\" cannot get resource \"clusterroles\"",
            "Forbidden",
        )
        .with_code(403);
        let err = Outer2(kube::Error::Api(Box::new(status)));
        let text = error_chain(&err);
        assert_eq!(
            text,
            "failed to read ClusterRole x: clusterroles.rbac.authorization.k8s.io \"x\" is forbidden: User \"u\" cannot get resource \"clusterroles\": Forbidden"
        );
        assert!(!text.contains("Status {"), "{text}");
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read ClusterRole x")]
    struct Outer2(#[source] kube::Error);
}
