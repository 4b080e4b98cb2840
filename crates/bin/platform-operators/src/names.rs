//! Names the resolution activator derives, computed the same way so the chain can be
//! followed back: the wrapper BundleDeployment of PlatformOperator `foo` is `foo`, and the
//! child of package `bar` is `package-bar`, each fitted to the BundleDeployment name limit
//! (a prefix and a hash when longer).

/// The wrapper BundleDeployment of the PlatformOperator (and ActiveResolution) `name`.
pub fn wrapper(name: &str) -> String {
    rukpak_api::names::bundle_deployment_name(name)
}

/// The child BundleDeployment that installs `package`.
pub fn child(package: &str) -> String {
    rukpak_api::names::bundle_deployment_name(&platform_api::package_bundle_deployment(package))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_keep_the_name_and_children_are_prefixed_and_fitted() {
        assert_eq!(wrapper("memcached"), "memcached");
        assert_eq!(child("memcached-operator"), "package-memcached-operator");
        let long = format!("memcached-{}", "x".repeat(50));
        assert_eq!(wrapper(&long).len(), rukpak_api::BUNDLE_DEPLOYMENT_NAME_MAX);
        assert!(child(&long).starts_with("package-memcached-"));
        assert!(child(&long).len() <= rukpak_api::BUNDLE_DEPLOYMENT_NAME_MAX);
    }
}
