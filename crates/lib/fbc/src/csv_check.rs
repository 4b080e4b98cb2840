//! Reading `olm.csv.metadata` for resolution: the whole value is checked exactly as
//! [`CsvMetadata`] reads it, but only `minKubeVersion` is kept.
//!
//! Every bundle of a real catalog carries this property, and most of its text is a
//! description, keywords, annotations and install modes that resolution never reads. Reading
//! them into a [`CsvMetadata`] (whose `#[serde(flatten)]` buffers every field first) only to
//! drop them was the largest part of parsing a catalog with [`Detail::Resolution`]. The types
//! here accept and refuse the same values without allocating anything but the kept version,
//! so both details still accept the same catalogs.
//!
//! [`Detail::Resolution`]: crate::Detail::Resolution
//! [`CsvMetadata`]: crate::property::CsvMetadata

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use crate::scan::Skip;

/// The `minKubeVersion` of an `olm.csv.metadata` value checked as a whole.
pub(crate) struct MinKubeVersion(pub(crate) Option<String>);

impl<'de> Deserialize<'de> for MinKubeVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // A map only, as `CsvMetadata` (flattened) is read: a JSON array is refused.
        deserializer.deserialize_map(MetadataVisitor)
    }
}

/// The keys [`crate::property::CsvMetadata`] names; any other key is what it keeps in `extra`.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum Field {
    DisplayName,
    Description,
    Keywords,
    Maturity,
    MinKubeVersion,
    InstallModes,
    Annotations,
    Labels,
    #[serde(other)]
    Other,
}

struct MetadataVisitor;

impl<'de> Visitor<'de> for MetadataVisitor {
    type Value = MinKubeVersion;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // What the derived reader says, so that both details give the same message.
        f.write_str("struct CsvMetadata")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MinKubeVersion, A::Error> {
        let mut min_kube_version = None;
        // One bit per named field, to refuse a repeated one as the derived reader does.
        let mut seen = 0u8;
        while let Some(field) = map.next_key::<Field>()? {
            let (bit, name) = match field {
                Field::DisplayName => (0, "displayName"),
                Field::Description => (1, "description"),
                Field::Keywords => (2, "keywords"),
                Field::Maturity => (3, "maturity"),
                Field::MinKubeVersion => (4, "minKubeVersion"),
                Field::InstallModes => (5, "installModes"),
                Field::Annotations => (6, "annotations"),
                Field::Labels => (7, "labels"),
                Field::Other => {
                    map.next_value::<Skip>()?;
                    continue;
                }
            };
            if seen & (1 << bit) != 0 {
                return Err(de::Error::duplicate_field(name));
            }
            seen |= 1 << bit;
            match field {
                Field::DisplayName | Field::Description | Field::Maturity => {
                    map.next_value::<Option<Str>>()?;
                }
                Field::MinKubeVersion => min_kube_version = map.next_value::<Option<String>>()?,
                Field::Keywords => {
                    map.next_value::<Vec<Str>>()?;
                }
                Field::InstallModes => {
                    map.next_value::<Vec<InstallMode>>()?;
                }
                Field::Annotations | Field::Labels => {
                    map.next_value::<StrMap>()?;
                }
                Field::Other => {}
            }
        }
        Ok(MinKubeVersion(min_kube_version))
    }
}

/// A string, checked and not kept (a zero-sized type: a `Vec` of them allocates nothing).
struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrVisitor;
        impl Visitor<'_> for StrVisitor {
            type Value = Str;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: de::Error>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        deserializer.deserialize_str(StrVisitor)
    }
}

/// [`crate::property::InstallMode`]'s shape, derived the same way, with nothing kept.
#[derive(Deserialize)]
struct InstallMode {
    #[serde(rename = "type")]
    _mode: Str,
    #[serde(rename = "supported")]
    _supported: bool,
}

/// A map of strings to strings, as `BTreeMap<String, String>` reads it (a repeated key is
/// allowed), with nothing kept.
struct StrMap;

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct StrMapVisitor;
        impl<'de> Visitor<'de> for StrMapVisitor {
            type Value = StrMap;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap, A::Error> {
                while map.next_entry::<Str, Str>()?.is_some() {}
                Ok(StrMap)
            }
        }
        deserializer.deserialize_map(StrMapVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::property::CsvMetadata;

    /// Both readers on one JSON text: whether each accepts it, and the kept version.
    fn both(text: &str) -> (Option<Option<String>>, Option<Option<String>>) {
        let full = serde_json::from_str::<CsvMetadata>(text)
            .ok()
            .map(|m| m.min_kube_version);
        let lean = serde_json::from_str::<MinKubeVersion>(text)
            .ok()
            .map(|m| m.0);
        (full, lean)
    }

    #[test]
    fn accepts_and_refuses_what_the_full_reader_does() {
        let cases = [
            r#"{}"#,
            r#"{"minKubeVersion":"1.25.0","displayName":"A","description":null}"#,
            r#"{"keywords":["a","b"],"maturity":"stable","unknown":{"deep":[1,2,{"x":null}]}}"#,
            r#"{"installModes":[{"type":"OwnNamespace","supported":true,"extra":1}]}"#,
            r#"{"installModes":[["OwnNamespace",true]]}"#,
            r#"{"installModes":[{"type":"OwnNamespace"}]}"#,
            r#"{"installModes":[{"type":1,"supported":true}]}"#,
            r#"{"installModes":null}"#,
            r#"{"annotations":{"a":"b","a":"c"},"labels":{}}"#,
            r#"{"annotations":{"a":1}}"#,
            r#"{"annotations":null}"#,
            r#"{"keywords":null}"#,
            r#"{"keywords":[null]}"#,
            r#"{"displayName":5}"#,
            r#"{"minKubeVersion":1.25}"#,
            r#"{"minKubeVersion":"1.2","minKubeVersion":"1.3"}"#,
            r#"{"displayName":"a","displayName":"b"}"#,
            r#"{"other":1,"other":2}"#,
            r#"["1.25.0"]"#,
            r#"null"#,
            r#""text""#,
        ];
        for case in cases {
            let (full, lean) = both(case);
            assert_eq!(full, lean, "{case}");
        }
        // Not every case is refused: the table covers both outcomes.
        assert_eq!(
            both(r#"{"minKubeVersion":"1.25.0"}"#).1,
            Some(Some("1.25.0".into()))
        );
        assert_eq!(both(r#"{"keywords":null}"#).1, None);
    }

    #[test]
    fn reads_from_a_value_as_from_text() {
        let value = serde_json::json!({
            "minKubeVersion": "1.27.0",
            "installModes": [{"type": "AllNamespaces", "supported": true}],
            "annotations": {"capabilities": "Basic Install"},
        });
        let lean = MinKubeVersion::deserialize(&value).map(|m| m.0).ok();
        assert_eq!(lean, Some(Some("1.27.0".to_owned())));
    }
}
