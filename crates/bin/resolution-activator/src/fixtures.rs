//! Test fixtures: catalogs and entities built from file-based catalog blobs.

use serde_json::json;

use crate::classes::Entity;
use deppy_api::Selection;

/// A bundle blob of `package` at `version` with `image`, optionally with
/// `olm.maxOpenShiftVersion`.
pub(crate) fn bundle_blob(
    package: &str,
    version: &str,
    image: &str,
    max_ocp: Option<&str>,
) -> serde_json::Value {
    let mut properties = vec![json!({
        "type": "olm.package",
        "value": {"packageName": package, "version": version}
    })];
    if let Some(max) = max_ocp {
        properties.push(json!({"type": "olm.maxOpenShiftVersion", "value": max}));
    }
    json!({
        "schema": "olm.bundle",
        "name": format!("{package}.v{version}"),
        "package": package,
        "image": image,
        "properties": properties,
    })
}

/// A catalog of one package whose `stable` channel lists `versions` (each replacing the
/// one before), with images `r/<package>:v<version>`.
pub(crate) fn catalog_files(package: &str, versions: &[&str]) -> Vec<(String, String)> {
    let mut files = vec![(
        format!("{package}/package.json"),
        json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}).to_string(),
    )];
    let mut entries = Vec::new();
    let mut previous: Option<String> = None;
    for version in versions {
        let name = format!("{package}.v{version}");
        let mut entry = json!({"name": name});
        if let Some(previous) = &previous {
            entry["replaces"] = json!(previous);
        }
        entries.push(entry);
        previous = Some(name);
        files.push((
            format!("{package}/bundle-{version}.json"),
            bundle_blob(package, version, &format!("r/{package}:v{version}"), None).to_string(),
        ));
    }
    files.push((
        format!("{package}/channel.json"),
        json!({"schema": "olm.channel", "package": package, "name": "stable", "entries": entries})
            .to_string(),
    ));
    files
}

/// An entity for a bundle of `package` at `version` with `image`, optionally with
/// `olm.maxOpenShiftVersion`.
pub(crate) fn entity(package: &str, version: &str, image: &str, max_ocp: Option<&str>) -> Entity {
    Entity {
        selection: Selection {
            catalog: "examples".into(),
            package: package.into(),
            version: version.into(),
            channel: "stable".into(),
        },
        bundle: deppy_api::IndexedBundle {
            name: format!("{package}.v{version}"),
            version: version.into(),
            image: image.into(),
            max_openshift_version: max_ocp.map(str::to_owned),
        },
    }
}
