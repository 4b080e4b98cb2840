//! Rendering errors for people: conditions, Events and logs need the whole cause chain
//! on one line, without repeating a cause its wrapper already quotes.

/// `err` followed by each source not already contained in the text so far, joined by
/// `": "`.
pub fn error_chain(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = cause.source();
    }
    message
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
}
