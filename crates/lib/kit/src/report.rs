//! Rendering errors for people: conditions, Events and logs need the whole cause chain
//! on one line, without repeating a cause its wrapper already quotes.

/// `err` followed by each source not already contained in the text so far, joined by
/// `": "`.
///
/// The result is fit for conditions, Events and logs: see [`scrub`].
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    scrub(&chain(err))
}

fn chain(err: &(dyn std::error::Error + 'static)) -> String {
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

/// `text` without credentials in URLs (`scheme://user:password@host` becomes
/// `scheme://***@host`) and without the ports of socket addresses outside URLs
/// (`connect to 10.0.0.7:41234 failed` becomes `connect to 10.0.0.7 failed`): client
/// errors quote ephemeral `ip:port` pairs, which would make every identical failure a new
/// message, rewrite status and re-emit Events. Addresses inside a URL, or followed by a
/// path as an image reference's registry is, are what the user wrote and kept as written.
pub fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        // Userinfo of a URL.
        if let Some(after) = rest.strip_prefix("://") {
            out.push_str("://");
            let authority_end = after
                .find(['/', ' ', '"', '\'', ')'])
                .unwrap_or(after.len());
            let authority = &after[..authority_end];
            match authority.rfind('@') {
                Some(at) => {
                    out.push_str("***@");
                    out.push_str(&authority[at + 1..]);
                }
                None => out.push_str(authority),
            }
            rest = &after[authority_end..];
            continue;
        }
        // A bare IPv4 socket address.
        if let Some((address, len)) = socket_address(rest)
            && !out.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '.')
        {
            out.push_str(address);
            rest = &rest[len..];
            continue;
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

/// `a.b.c.d:port` at the start of `text`: the address and the length of the whole.
fn socket_address(text: &str) -> Option<(&str, usize)> {
    let colon = text.find(':')?;
    let address = &text[..colon];
    address.parse::<std::net::Ipv4Addr>().ok()?;
    let digits = text[colon + 1..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    let len = colon + 1 + digits;
    // `host:port/path` is a reference someone wrote (an image's registry), not an
    // ephemeral socket address: keep it as written.
    (digits > 0 && !text[len..].starts_with('/')).then_some((address, len))
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

    #[test]
    fn credentials_and_ephemeral_ports_are_scrubbed_but_urls_kept() {
        assert_eq!(
            scrub("failed to fetch https://alice:s3cret@git.example/r.git: denied"),
            "failed to fetch https://***@git.example/r.git: denied"
        );
        assert_eq!(
            scrub("tcp connect error: 10.0.0.7:41234: Connection refused"),
            "tcp connect error: 10.0.0.7: Connection refused"
        );
        assert_eq!(
            scrub("failed to download http://127.0.0.1:39123/b.tgz: status 404"),
            "failed to download http://127.0.0.1:39123/b.tgz: status 404"
        );
        assert_eq!(
            scrub("failed to unpack image 127.0.0.1:5000/team/catalog:v1: not found"),
            "failed to unpack image 127.0.0.1:5000/team/catalog:v1: not found"
        );
        assert_eq!(
            scrub("at 12:30:45 version 1.2.3.4"),
            "at 12:30:45 version 1.2.3.4"
        );
    }

    #[derive(Debug, thiserror::Error)]
    #[error("failed to read ClusterRole x")]
    struct Outer2(#[source] kube::Error);
}
