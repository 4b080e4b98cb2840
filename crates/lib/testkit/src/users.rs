//! Other users of the test cluster: clients that act as them (through the admin's right to
//! impersonate) and the cluster roles they are granted, for tests that play a tenant.

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::PostParams;
use kube::{Api, Client};
use serde_json::json;

/// A client acting as `user`, a member of `system:authenticated` and of no other group.
pub async fn impersonating(user: &str) -> Client {
    let mut config = kube::Config::infer()
        .await
        .unwrap_or_else(|err| panic!("failed to read KUBECONFIG: {err}"));
    config.auth_info.impersonate = Some(user.to_owned());
    config.auth_info.impersonate_groups = Some(vec!["system:authenticated".to_owned()]);
    Client::try_from(config).unwrap_or_else(|err| panic!("failed to build a client: {err}"))
}

/// Creates the cluster role `role` with `rules` (a JSON list of policy rules) and binds it
/// to `user`.
pub async fn grant(admin: &Client, user: &str, role: &str, rules: serde_json::Value) {
    let object: ClusterRole =
        serde_json::from_value(json!({ "metadata": { "name": role }, "rules": rules })).unwrap();
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|err| panic!("failed to create ClusterRole {role}: {err}"));
    bind(admin, user, role, role).await;
}

/// Binds the existing cluster role `role` to `user` with a binding named `binding`.
pub async fn bind(admin: &Client, user: &str, binding: &str, role: &str) {
    let object: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": { "name": binding },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user }]
    }))
    .unwrap();
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &object)
        .await
        .unwrap_or_else(|err| panic!("failed to create ClusterRoleBinding {binding}: {err}"));
}

/// A new ServiceAccount in `namespace` and a token of it (one hour): for tests of servers
/// that authenticate bearer tokens. Returns its user name
/// (`system:serviceaccount:NAMESPACE:NAME`, which [`grant`] takes) and the token.
pub async fn service_account_token(admin: &Client, namespace: &str) -> (String, String) {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    let name = crate::unique_name("sa");
    let accounts = Api::<ServiceAccount>::namespaced(admin.clone(), namespace);
    let account: ServiceAccount =
        serde_json::from_value(json!({ "metadata": { "name": name, "namespace": namespace } }))
            .unwrap();
    accounts
        .create(&PostParams::default(), &account)
        .await
        .unwrap_or_else(|err| panic!("failed to create ServiceAccount {namespace}/{name}: {err}"));
    let request: TokenRequest =
        serde_json::from_value(json!({ "spec": { "audiences": [], "expirationSeconds": 3600 } }))
            .unwrap();
    let token = accounts
        .create_token_request(&name, &PostParams::default(), &request)
        .await
        .unwrap_or_else(|err| panic!("failed to create a token for {namespace}/{name}: {err}"))
        .status
        .and_then(|status| status.token)
        .unwrap_or_else(|| panic!("the token request for {namespace}/{name} returned no token"));
    (format!("system:serviceaccount:{namespace}:{name}"), token)
}
