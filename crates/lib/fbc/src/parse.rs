//! Reading catalog files, from a directory or from memory, into a [`Catalog`].

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::ParseError;
use crate::ignore::{INDEX_IGNORE, IndexIgnore};
use crate::location::Location;
use crate::model::{
    Bundle, Catalog, Channel, ChannelEntry, DeprecationEntry, DeprecationReference, Deprecations,
    Icon, Meta, Package, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
};
use crate::property::{Property, RawProperty};
use crate::range::{PrereleasePolicy, VersionRange};

/// Reads every catalog file under `root`, recursively.
///
/// As in operator-registry, every file that a `.indexignore` does not hide is a catalog file,
/// whatever its extension. A file whose first non-blank character is `{` is a stream of
/// concatenated JSON objects; any other file is multi-document YAML (empty documents are
/// skipped). Files are read in path order, so the catalog's order is deterministic.
///
/// A `.indexignore` holds gitignore patterns relative to its own directory and applies to
/// everything below it; a deeper file's verdict on a path wins over a shallower one's, and a
/// file inside an ignored directory stays ignored.
///
/// Symbolic links to files are followed; symbolic links to directories are not, as with Go's
/// `fs.WalkDir` that operator-registry uses.
pub fn parse_dir(root: impl AsRef<Path>) -> Result<Catalog, ParseError> {
    let root = root.as_ref();
    let mut paths = Vec::new();
    collect_files(root, "", &mut paths)?;
    paths.sort();

    let read = |rel: &str| {
        let path = root.join(rel);
        fs::read(&path).map_err(|source| ParseError::Read { path, source })
    };
    let mut ignore = IndexIgnore::default();
    for rel in paths.iter().filter(|p| is_index_ignore(p)) {
        let bytes = read(rel)?;
        add_ignore(&mut ignore, rel, &bytes)?;
    }
    let mut catalog = Catalog::default();
    for rel in paths
        .iter()
        .filter(|p| !is_index_ignore(p) && !ignore.is_ignored(p))
    {
        let bytes = read(rel)?;
        parse_into(&mut catalog, rel, &bytes)?;
    }
    Ok(catalog)
}

/// Reads catalog files held in memory, e.g. extracted from a tar archive, with the same rules
/// as [`parse_dir`].
///
/// Paths are `/`-separated and relative to the catalog root; a leading `./` or `/` is dropped,
/// and paths ending in `/` (directory entries) are skipped. `.indexignore` files among them
/// apply as they would on disk.
pub fn parse_files<I, P, C>(files: I) -> Result<Catalog, ParseError>
where
    I: IntoIterator<Item = (P, C)>,
    P: AsRef<str>,
    C: AsRef<[u8]>,
{
    let mut files: Vec<(String, C)> = files
        .into_iter()
        .filter_map(|(path, contents)| {
            normalize(path.as_ref()).map(|path| (path.to_owned(), contents))
        })
        .collect();
    files.sort_by(|(a, _), (b, _)| a.cmp(b));

    let mut ignore = IndexIgnore::default();
    for (path, contents) in files.iter().filter(|(p, _)| is_index_ignore(p)) {
        add_ignore(&mut ignore, path, contents.as_ref())?;
    }
    let mut catalog = Catalog::default();
    for (path, contents) in files
        .iter()
        .filter(|(p, _)| !is_index_ignore(p) && !ignore.is_ignored(p))
    {
        parse_into(&mut catalog, path, contents.as_ref())?;
    }
    Ok(catalog)
}

/// Parses one catalog file's blobs and appends them to `catalog`. `file` names the file in
/// errors and locations.
pub fn parse_into(catalog: &mut Catalog, file: &str, contents: &[u8]) -> Result<(), ParseError> {
    for (document, value) in decode_documents(file, contents)? {
        add_blob(catalog, Location::new(file, document), value)?;
    }
    Ok(())
}

fn collect_files(root: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), ParseError> {
    let dir = root.join(rel);
    let read_err = |path: PathBuf| move |source| ParseError::Read { path, source };
    let entries = fs::read_dir(&dir).map_err(read_err(dir.clone()))?;
    for entry in entries {
        let entry = entry.map_err(read_err(dir.clone()))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let file_type = entry.file_type().map_err(read_err(entry.path()))?;
        if file_type.is_dir() {
            collect_files(root, &child, out)?;
        } else if file_type.is_file()
            || (file_type.is_symlink() && fs::metadata(entry.path()).is_ok_and(|m| m.is_file()))
        {
            out.push(child);
        }
    }
    Ok(())
}

fn normalize(mut path: &str) -> Option<&str> {
    loop {
        if let Some(rest) = path.strip_prefix("./") {
            path = rest;
        } else if let Some(rest) = path.strip_prefix('/') {
            path = rest;
        } else {
            break;
        }
    }
    (!path.is_empty() && !path.ends_with('/')).then_some(path)
}

fn is_index_ignore(path: &str) -> bool {
    path.rsplit('/').next() == Some(INDEX_IGNORE)
}

fn add_ignore(ignore: &mut IndexIgnore, file: &str, contents: &[u8]) -> Result<(), ParseError> {
    ignore
        .add(file, &String::from_utf8_lossy(contents))
        .map_err(|source| ParseError::IndexIgnore {
            file: file.to_owned(),
            source,
        })
}

/// Splits a file into its non-empty documents, numbered from 1.
fn decode_documents(file: &str, contents: &[u8]) -> Result<Vec<(usize, Value)>, ParseError> {
    let contents = contents.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(contents);
    let first = contents.iter().find(|b| !b.is_ascii_whitespace());
    let mut documents = Vec::new();
    if first == Some(&b'{') {
        let stream = serde_json::Deserializer::from_slice(contents).into_iter::<Value>();
        for (index, item) in stream.enumerate() {
            let value = item.map_err(|source| ParseError::Json {
                file: file.to_owned(),
                document: index + 1,
                source,
            })?;
            documents.push((index + 1, value));
        }
    } else {
        // The YAML iterator repeats a failure forever, so stop at the first one.
        for (index, document) in serde_yaml_ng::Deserializer::from_slice(contents).enumerate() {
            let value = Value::deserialize(document).map_err(|source| ParseError::Yaml {
                file: file.to_owned(),
                document: index + 1,
                source,
            })?;
            if !value.is_null() {
                documents.push((index + 1, value));
            }
        }
    }
    Ok(documents)
}

fn add_blob(catalog: &mut Catalog, mut location: Location, value: Value) -> Result<(), ParseError> {
    let Value::Object(object) = &value else {
        return Err(ParseError::NotAnObject {
            location: Box::new(location),
        });
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
    location.name = text("name").filter(|n| !n.is_empty());
    let Some(schema) = text("schema").filter(|s| !s.is_empty()) else {
        return Err(ParseError::MissingSchema {
            location: Box::new(location),
        });
    };
    location.schema = Some(schema.clone());

    match schema.as_str() {
        SCHEMA_PACKAGE => catalog.packages.push(package(location, value)?),
        SCHEMA_CHANNEL => catalog.channels.push(channel(location, value)?),
        SCHEMA_BUNDLE => catalog.bundles.push(bundle(location, value)?),
        SCHEMA_DEPRECATIONS => catalog.deprecations.push(deprecations(location, value)?),
        _ => catalog.others.push(Meta {
            package: text("package").filter(|p| !p.is_empty()),
            name: location.name.clone(),
            schema,
            blob: value,
            location,
        }),
    }
    Ok(())
}

/// Treats JSON `null` like an absent field, as Go's decoder does.
fn nullable<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPackage {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default)]
    default_channel: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    icon: Option<Icon>,
    #[serde(default, deserialize_with = "nullable")]
    properties: Vec<RawProperty>,
}

#[derive(Deserialize)]
struct RawChannel {
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    entries: Vec<RawEntry>,
    #[serde(default, deserialize_with = "nullable")]
    properties: Vec<RawProperty>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEntry {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default)]
    replaces: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    skips: Vec<String>,
    #[serde(default)]
    skip_range: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawBundle {
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    image: String,
    #[serde(default, deserialize_with = "nullable")]
    related_images: Vec<RelatedImage>,
    #[serde(default, deserialize_with = "nullable")]
    properties: Vec<RawProperty>,
}

#[derive(Deserialize)]
struct RawDeprecations {
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default, deserialize_with = "nullable")]
    entries: Vec<RawDeprecationEntry>,
}

#[derive(Deserialize)]
struct RawDeprecationEntry {
    reference: RawReference,
    #[serde(default, deserialize_with = "nullable")]
    message: String,
}

#[derive(Deserialize)]
struct RawReference {
    #[serde(default, deserialize_with = "nullable")]
    schema: String,
    #[serde(default)]
    name: Option<String>,
}

fn decode<T: for<'de> Deserialize<'de>>(
    location: &Location,
    schema: &'static str,
    value: Value,
) -> Result<T, ParseError> {
    serde_json::from_value(value).map_err(|source| ParseError::Shape {
        location: Box::new(location.clone()),
        schema,
        source,
    })
}

fn require(location: &Location, field: &'static str, value: &str) -> Result<(), ParseError> {
    if value.is_empty() {
        return Err(ParseError::MissingField {
            location: Box::new(location.clone()),
            field,
        });
    }
    Ok(())
}

fn non_empty(value: Option<String>) -> Option<String> {
    value.filter(|v| !v.is_empty())
}

fn properties(location: &Location, raw: Vec<RawProperty>) -> Result<Vec<Property>, ParseError> {
    raw.into_iter()
        .enumerate()
        .map(|(index, property)| {
            let type_name = property.type_name.clone();
            Property::try_from(property).map_err(|source| ParseError::Property {
                location: Box::new(location.clone()),
                index,
                type_name,
                source,
            })
        })
        .collect()
}

fn package(location: Location, value: Value) -> Result<Package, ParseError> {
    let raw: RawPackage = decode(&location, SCHEMA_PACKAGE, value)?;
    require(&location, "name", &raw.name)?;
    Ok(Package {
        name: raw.name,
        default_channel: non_empty(raw.default_channel),
        description: non_empty(raw.description),
        icon: raw.icon,
        properties: properties(&location, raw.properties)?,
        location,
    })
}

fn channel(location: Location, value: Value) -> Result<Channel, ParseError> {
    let raw: RawChannel = decode(&location, SCHEMA_CHANNEL, value)?;
    require(&location, "package", &raw.package)?;
    require(&location, "name", &raw.name)?;
    let mut entries = Vec::with_capacity(raw.entries.len());
    for entry in raw.entries {
        require(&location, "entries[].name", &entry.name)?;
        let skip_range = match non_empty(entry.skip_range) {
            Some(text) => Some(
                VersionRange::parse(&text, PrereleasePolicy::Ordered).map_err(|source| {
                    ParseError::SkipRange {
                        location: Box::new(location.clone()),
                        entry: entry.name.clone(),
                        source,
                    }
                })?,
            ),
            None => None,
        };
        entries.push(ChannelEntry {
            name: entry.name,
            replaces: non_empty(entry.replaces),
            skips: entry.skips.into_iter().filter(|s| !s.is_empty()).collect(),
            skip_range,
        });
    }
    Ok(Channel {
        package: raw.package,
        name: raw.name,
        entries,
        properties: properties(&location, raw.properties)?,
        location,
    })
}

fn bundle(location: Location, value: Value) -> Result<Bundle, ParseError> {
    let raw: RawBundle = decode(&location, SCHEMA_BUNDLE, value)?;
    require(&location, "package", &raw.package)?;
    require(&location, "name", &raw.name)?;
    let properties = properties(&location, raw.properties)?;
    let mut packages = properties.iter().filter_map(|p| match p {
        Property::Package(p) => Some(p),
        _ => None,
    });
    let (Some(package), None) = (packages.next(), packages.next()) else {
        let count = properties
            .iter()
            .filter(|p| matches!(p, Property::Package(_)))
            .count();
        return Err(ParseError::PackagePropertyCount {
            location: Box::new(location),
            count,
        });
    };
    if package.package_name != raw.package {
        return Err(ParseError::PackagePropertyMismatch {
            package: raw.package,
            property: package.package_name.clone(),
            location: Box::new(location),
        });
    }
    let version = package.version.clone();
    Ok(Bundle {
        package: raw.package,
        name: raw.name,
        image: raw.image,
        related_images: raw.related_images,
        version,
        properties,
        location,
    })
}

fn deprecations(location: Location, value: Value) -> Result<Deprecations, ParseError> {
    let raw: RawDeprecations = decode(&location, SCHEMA_DEPRECATIONS, value)?;
    require(&location, "package", &raw.package)?;
    let mut entries = Vec::with_capacity(raw.entries.len());
    for (index, entry) in raw.entries.into_iter().enumerate() {
        require(&location, "entries[].message", &entry.message)?;
        let schema = entry.reference.schema;
        let name = non_empty(entry.reference.name);
        let named = |make: fn(String) -> DeprecationReference| match name.clone() {
            Some(name) => Ok(make(name)),
            None => Err(ParseError::DeprecationName {
                location: Box::new(location.clone()),
                index,
                schema: schema.clone(),
            }),
        };
        let reference = match schema.as_str() {
            SCHEMA_PACKAGE => DeprecationReference::Package,
            SCHEMA_CHANNEL => named(DeprecationReference::Channel)?,
            SCHEMA_BUNDLE => named(DeprecationReference::Bundle)?,
            "" => {
                return Err(ParseError::MissingField {
                    location: Box::new(location),
                    field: "entries[].reference.schema",
                });
            }
            _ => {
                return Err(ParseError::DeprecationSchema {
                    location: Box::new(location),
                    index,
                    schema,
                });
            }
        };
        entries.push(DeprecationEntry {
            reference,
            message: entry.message,
        });
    }
    Ok(Deprecations {
        package: raw.package,
        entries,
        location,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_drops_leading_dots_and_slashes_and_skips_directories() {
        assert_eq!(normalize("./a/b.yaml"), Some("a/b.yaml"));
        assert_eq!(normalize("/./a.json"), Some("a.json"));
        assert_eq!(normalize("dir/"), None);
        assert_eq!(normalize("./"), None);
    }

    #[test]
    fn empty_yaml_documents_are_counted_but_skipped() {
        let docs = decode_documents("f.yaml", b"---\n---\nschema: x\n").unwrap();
        assert_eq!(docs.len(), 1);
        assert!(
            docs[0].0 > 1,
            "document number {} counts the empty ones",
            docs[0].0
        );
    }

    #[test]
    fn concatenated_json_objects_are_separate_documents() {
        let docs = decode_documents("f.json", b" {\"a\":1}\n{\"b\":2}{\"c\":3}").unwrap();
        let numbers: Vec<usize> = docs.iter().map(|(n, _)| *n).collect();
        assert_eq!(numbers, vec![1, 2, 3]);
    }
}
