//! How results are printed: tables for people (`-o table`, the default), JSON or YAML for
//! scripts (`-o json`, `-o yaml`; stable field names, camelCase as in the Kubernetes API).

use std::fmt::Write as _;

use serde::Serialize;

use crate::cluster::CatalogRow;
use crate::search::Found;
use crate::show::PackageView;
use crate::upgrades::Upgrades;

/// An output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Aligned columns for people.
    Table,
    /// JSON for scripts.
    Json,
    /// YAML for scripts.
    Yaml,
}

/// `value` as JSON or YAML; `None` for [`Format::Table`], which each command prints its own
/// way.
pub fn structured(format: Format, value: &impl Serialize) -> Option<Result<String, String>> {
    match format {
        Format::Table => None,
        Format::Json => Some(
            serde_json::to_string_pretty(value)
                .map(|text| text + "\n")
                .map_err(|err| err.to_string()),
        ),
        Format::Yaml => Some(serde_yaml_ng::to_string(value).map_err(|err| err.to_string())),
    }
}

/// The search results as a table. Pure.
pub fn search_table(found: &[Found]) -> String {
    let rows: Vec<Vec<String>> = found
        .iter()
        .map(|f| {
            vec![
                f.catalog.clone(),
                f.package.clone(),
                f.default_channel.clone().unwrap_or_else(|| "-".into()),
                f.latest.clone().unwrap_or_else(|| "-".into()),
                if f.deprecated.is_some() { "yes" } else { "-" }.into(),
                f.summary.clone(),
            ]
        })
        .collect();
    table(
        &[
            "CATALOG",
            "PACKAGE",
            "DEFAULT CHANNEL",
            "LATEST",
            "DEPRECATED",
            "SUMMARY",
        ],
        &rows,
    )
}

/// The cluster's Catalogs as a table; the `Serving` message is shown for a catalog that
/// does not serve. Pure.
pub fn catalogs_table(rows: &[CatalogRow]) -> String {
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            let count = |n: Option<i64>| n.map_or_else(|| "-".into(), |n| n.to_string());
            vec![
                row.name.clone(),
                row.serving.clone(),
                count(row.packages),
                count(row.bundles),
                row.source.clone(),
                if row.serving == "True" {
                    String::new()
                } else {
                    row.message.clone()
                },
            ]
        })
        .collect();
    table(
        &[
            "NAME", "SERVING", "PACKAGES", "BUNDLES", "SOURCE", "MESSAGE",
        ],
        &cells,
    )
}

/// A package in each catalog that has it, for people. Pure.
pub fn show_text(views: &[PackageView]) -> String {
    let mut out = String::new();
    for (i, view) in views.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let or_dash = |value: &Option<String>| value.clone().unwrap_or_else(|| "-".into());
        let _ = writeln!(out, "Package:          {}", view.package);
        let _ = writeln!(out, "Catalog:          {}", view.catalog);
        if !view.summary.is_empty() {
            let _ = writeln!(out, "Summary:          {}", view.summary);
        }
        let _ = writeln!(out, "Default channel:  {}", or_dash(&view.default_channel));
        let _ = writeln!(out, "Deprecated:       {}", or_dash(&view.deprecated));
        let _ = writeln!(
            out,
            "Icon:             {}",
            if view.icon { "yes" } else { "no" }
        );
        out.push('\n');
        let rows: Vec<Vec<String>> = view
            .channels
            .iter()
            .map(|c| {
                vec![
                    c.name.clone(),
                    c.head
                        .as_ref()
                        .map_or_else(|| "-".into(), |h| h.version.clone()),
                    c.versions
                        .iter()
                        .map(|v| {
                            if v.deprecated.is_some() {
                                format!("{} (deprecated)", v.version)
                            } else {
                                v.version.clone()
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(", "),
                    or_dash(&c.deprecated),
                ]
            })
            .collect();
        out.push_str(&table(
            &["CHANNEL", "HEAD", "VERSIONS", "DEPRECATED"],
            &rows,
        ));
        for channel in &view.channels {
            if channel.upgrades.is_empty() {
                continue;
            }
            let version = |bundle: &str| {
                channel
                    .versions
                    .iter()
                    .find(|v| v.bundle == bundle)
                    .map_or_else(|| bundle.to_owned(), |v| v.version.clone())
            };
            let _ = writeln!(out, "\nUpgrades in channel {}:", channel.name);
            for upgrade in &channel.upgrades {
                let _ = writeln!(
                    out,
                    "  {} -> {}",
                    version(&upgrade.from),
                    version(&upgrade.to)
                );
            }
        }
        for problem in &view.problems {
            let _ = writeln!(out, "\nNot resolvable from this catalog: {problem}");
        }
    }
    out
}

/// `upgrades NAME` of a PlatformOperator: what it runs and accepts, what its controllers
/// say about moving, then the upgrades as `upgrades_text` prints them.
pub fn installed_text(installed: &crate::upgrades::Installed) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "PlatformOperator:  {}", installed.platform_operator);
    let _ = writeln!(
        out,
        "Runs:              {} {}",
        installed.package, installed.version
    );
    let _ = writeln!(
        out,
        "Follows:           channel {}, versions {}, policy {}",
        installed.channel.as_deref().unwrap_or("(the default)"),
        installed.version_range.as_deref().unwrap_or("(any)"),
        installed.policy
    );
    if let Some(progress) = &installed.progressing {
        let _ = writeln!(
            out,
            "Progressing:       {} ({}): {}",
            progress.status, progress.reason, progress.message
        );
    }
    out.push('\n');
    out.push_str(&upgrades_text(&installed.upgrades));
    out
}

/// The upgrades of an installed version, in each catalog that has it, for people. Pure.
pub fn upgrades_text(found: &[Upgrades]) -> String {
    let mut out = String::new();
    for (i, upgrades) in found.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let from = &upgrades.from;
        let _ = writeln!(out, "Package:    {}", upgrades.package);
        let _ = writeln!(out, "Catalog:    {}", upgrades.catalog);
        let _ = writeln!(
            out,
            "Installed:  {} ({}), in {}",
            from.version,
            from.bundle,
            if from.channels.is_empty() {
                "no channel".to_owned()
            } else {
                format!("channel {}", from.channels.join(", "))
            }
        );
        if let Some(notice) = &from.deprecated {
            let _ = writeln!(out, "Deprecated: {notice}");
        }
        if let Some(channel) = &upgrades.channel {
            let _ = writeln!(out, "Following:  channel {channel} only");
        }
        out.push('\n');
        if upgrades.next.is_empty() {
            let _ = writeln!(
                out,
                "No upgrade: nothing in {} upgrades from {}.",
                upgrades
                    .channel
                    .as_ref()
                    .map_or_else(|| "its channels".to_owned(), |c| format!("channel {c}")),
                from.version
            );
            continue;
        }
        let rows: Vec<Vec<String>> = upgrades
            .next
            .iter()
            .map(|step| {
                vec![
                    step.version.clone(),
                    step.bundle.clone(),
                    step.channels.join(", "),
                    step.deprecated.clone().unwrap_or_else(|| "-".into()),
                ]
            })
            .collect();
        out.push_str(&table(&["NEXT", "BUNDLE", "CHANNELS", "DEPRECATED"], &rows));
        let further: Vec<&str> = upgrades
            .reachable
            .iter()
            .filter(|r| !upgrades.next.iter().any(|n| n.bundle == r.bundle))
            .map(|r| r.version.as_str())
            .collect();
        if !further.is_empty() {
            let _ = writeln!(out, "\nLater, through those: {}", further.join(", "));
        }
    }
    out
}

/// Columns padded to their widest cell, two spaces apart, the last one not padded (as
/// kubectl prints). Pure.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                let _ = write!(out, "{cell:width$}  ", width = *width);
            }
        }
        let trimmed = out.trim_end_matches(' ').len();
        out.truncate(trimmed);
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell_and_lines_end_without_spaces() {
        let rows = vec![
            vec!["a".to_owned(), "long value".to_owned(), "x".to_owned()],
            vec!["bbb".to_owned(), "v".to_owned(), String::new()],
        ];
        assert_eq!(
            table(&["H1", "H2", "H3"], &rows),
            "H1   H2          H3\na    long value  x\nbbb  v\n"
        );
    }
}
