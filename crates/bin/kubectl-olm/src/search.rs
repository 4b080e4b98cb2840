//! `search <words>`: the packages whose name or description holds every word.

use serde::Serialize;

use crate::catalogs::Catalog;

/// One package found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Found {
    /// The catalog it is in.
    pub catalog: String,
    /// The package name.
    pub package: String,
    /// Its default channel, if the catalog names one.
    pub default_channel: Option<String>,
    /// The version at the head of the default channel (what an install without a version
    /// gets), if it has one.
    pub latest: Option<String>,
    /// The catalog's deprecation notice on the package, if any.
    pub deprecated: Option<String>,
    /// The first line of its description.
    pub summary: String,
}

/// The packages of `catalogs` whose name or description contains every one of `words`
/// (case-insensitive; no words: every package), by catalog then package name. Pure.
pub fn search(catalogs: &[Catalog], words: &[String]) -> Vec<Found> {
    let words: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let mut found = Vec::new();
    for catalog in catalogs {
        let index = &catalog.index;
        for package in index.packages() {
            let description = package.description.as_deref().unwrap_or_default();
            let haystack = format!("{}\n{}", package.name, description).to_lowercase();
            if !words.iter().all(|word| haystack.contains(word.as_str())) {
                continue;
            }
            let latest = index
                .default_channel(&package.name)
                .and_then(|channel| index.channel_graph(&package.name, &channel.name))
                .and_then(|graph| index.bundle(&package.name, &graph.head().name))
                .map(|bundle| bundle.version.to_string());
            found.push(Found {
                catalog: catalog.name.clone(),
                package: package.name.clone(),
                default_channel: package.default_channel.clone(),
                latest,
                deprecated: index.package_deprecation(&package.name).map(str::to_owned),
                summary: first_line(description),
            });
        }
    }
    found.sort_by(|a, b| (&a.catalog, &a.package).cmp(&(&b.catalog, &b.package)));
    found
}

/// The first non-empty line of a Markdown description, without heading marks, at most
/// 80 characters. Pure.
pub fn first_line(description: &str) -> String {
    let line = description
        .lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .unwrap_or_default();
    if line.chars().count() <= 80 {
        return line.to_owned();
    }
    let cut: String = line.chars().take(79).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_is_the_first_line_without_heading_marks_and_short() {
        assert_eq!(
            first_line("\n## Etcd Operator\nManages etcd"),
            "Etcd Operator"
        );
        assert_eq!(first_line(""), "");
        let long = "x".repeat(100);
        let summary = first_line(&long);
        assert_eq!(summary.chars().count(), 80);
        assert!(summary.ends_with('…'));
    }
}
