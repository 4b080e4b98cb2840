//! Reading catalog files, from a directory or from memory, into a [`Catalog`].

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::detail::Detail;
use crate::dir::CatalogDir;
use crate::error::ParseError;
use crate::ignore::{INDEX_IGNORE, IndexIgnore};
use crate::location::Location;
use crate::model::{
    Bundle, Catalog, Channel, ChannelEntry, DeprecationEntry, DeprecationReference, Deprecations,
    Icon, Meta, Package, RelatedImage, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS,
    SCHEMA_PACKAGE,
};
use crate::one_pass::{self, Interpreted, KnownDetail};
use crate::parallel;
use crate::property::{Property, RawJson, RawProperty};
use crate::range::{PrereleasePolicy, VersionRange};
use crate::scan::{Head, without_position};

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
    parse_dir_with(root, Detail::Full)
}

/// [`parse_dir`], keeping what `detail` says.
pub fn parse_dir_with(root: impl AsRef<Path>, detail: Detail) -> Result<Catalog, ParseError> {
    // Listing and parsing share one set of threads.
    let root = root.as_ref();
    parallel::with_workers(|| read_dir(root, detail))
}

fn read_dir(root: &Path, detail: Detail) -> Result<Catalog, ParseError> {
    let root = CatalogDir::open(root)?;
    let (files, directories) = root.top_level()?;

    // The root's `.indexignore` can hide anything, so it is read before anything else.
    let mut ignore = IndexIgnore::default();
    let mut buffer = Vec::new();
    for rel in files.iter().filter(|p| is_index_ignore(p)) {
        let bytes = root.read(rel, &mut buffer)?;
        add_ignore(&mut ignore, rel, bytes)?;
    }
    // One piece of work per top-level file and per top-level directory (a package, in the
    // usual layout), listed and read by the same worker: listing every directory first and
    // reading the files in a second pass walked each file's path from the root again and
    // waited for the slowest listing in between. The files under a directory are exactly the
    // paths that start with its name and a `/`, so they sort together, right where that
    // prefix sorts among the top-level files: in this order, files are read in path order,
    // as when they were listed all at once and sorted.
    // A directory's piece is its name and the `/`, which no file name ends with.
    let mut pieces: Vec<String> = files
        .into_iter()
        .filter(|p| !is_index_ignore(p))
        .chain(directories.into_iter().map(|mut directory| {
            directory.push('/');
            directory
        }))
        .collect();
    pieces.sort_unstable();
    // Only the first error in path order is reported, as when files were read one after the
    // other. Each worker reads into one buffer of its own and gathers each piece's blobs in
    // lists of its own, which the piece then takes at exactly their length: a piece's own
    // lists, grown blob by blob, were copied into fresh memory as they doubled, 3% of a
    // whole run's CPU at 22k variables.
    let read = |(buffer, gathered): &mut (Vec<u8>, Catalog), piece: &String| {
        let read = read_piece(&root, &ignore, piece, detail, buffer, gathered);
        // Taken whether or not the piece failed, so that nothing of it is left behind.
        let taken = gathered.take_exact();
        read.map(|()| taken)
    };
    let scratch = || (Vec::new(), Catalog::default());
    let parts = parallel::map_in_order_with(&pieces, 1, scratch, read, Result::is_err);
    Ok(Catalog::concat(
        parts.into_iter().collect::<Result<_, _>>()?,
    ))
}

/// Adds the blobs of one top-level file, or of every file under one top-level directory
/// (`piece` ends with `/`), to `part`, in path order.
fn read_piece(
    root: &CatalogDir<'_>,
    ignore: &IndexIgnore,
    piece: &str,
    detail: Detail,
    buffer: &mut Vec<u8>,
    part: &mut Catalog,
) -> Result<(), ParseError> {
    let Some(directory) = piece.strip_suffix('/') else {
        if !ignore.is_ignored(piece) {
            let bytes = root.read(piece, buffer)?;
            parse_into_with(part, piece, bytes, detail)?;
        }
        return Ok(());
    };
    let mut paths = root.files_under(directory)?;
    paths.sort_unstable();
    // `.indexignore` files below the root apply below their own directory only.
    let mut nested = paths.iter().filter(|p| is_index_ignore(p)).peekable();
    let ignore = if nested.peek().is_some() {
        let mut combined = ignore.clone();
        for rel in nested {
            let bytes = root.read(rel, buffer)?;
            add_ignore(&mut combined, rel, bytes)?;
        }
        Cow::Owned(combined)
    } else {
        Cow::Borrowed(ignore)
    };
    for rel in paths
        .iter()
        .filter(|p| !is_index_ignore(p) && !ignore.is_ignored(p))
    {
        let bytes = root.read(rel, buffer)?;
        parse_into_with(part, rel, bytes, detail)?;
    }
    Ok(())
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
    parse_files_with(files, Detail::Full)
}

/// [`parse_files`], keeping what `detail` says.
pub fn parse_files_with<I, P, C>(files: I, detail: Detail) -> Result<Catalog, ParseError>
where
    I: IntoIterator<Item = (P, C)>,
    P: AsRef<str>,
    C: AsRef<[u8]>,
{
    let mut files: Vec<(String, C)> = files
        .into_iter()
        .filter_map(|(path, contents)| {
            normalize_path(path.as_ref()).map(|path| (path.to_owned(), contents))
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
        parse_into_with(&mut catalog, path, contents.as_ref(), detail)?;
    }
    catalog.shrink_to_fit();
    Ok(catalog)
}

/// Parses one catalog file's blobs and appends them to `catalog`. `file` names the file in
/// errors and locations.
pub fn parse_into(catalog: &mut Catalog, file: &str, contents: &[u8]) -> Result<(), ParseError> {
    parse_into_with(catalog, file, contents, Detail::Full)
}

/// [`parse_into`], keeping what `detail` says.
///
/// Each document is read straight into its typed blob and nothing else of it is held: a JSON
/// file is read in place, never as generic JSON values, and a YAML file one document at a
/// time. So the memory a catalog takes is that of what is kept.
///
/// The first malformed document of a file is what its error names, even after an invalid
/// blob earlier in the file, as when whole files were read before their blobs: after the
/// first invalid blob, the rest of the file is only checked for syntax.
pub fn parse_into_with(
    catalog: &mut Catalog,
    file: &str,
    contents: &[u8],
    detail: Detail,
) -> Result<(), ParseError> {
    parse_documents(catalog, file, contents, detail, Reading::OnePassFirst)
}

/// Whether JSON documents are first tried in one pass ([`read_typed_documents`]); tests turn
/// it off to compare with the careful reading alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reading {
    OnePassFirst,
    #[cfg(test)]
    CarefulOnly,
}

fn parse_documents(
    catalog: &mut Catalog,
    file: &str,
    contents: &[u8],
    detail: Detail,
    reading: Reading,
) -> Result<(), ParseError> {
    let contents = contents.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(contents);
    // One copy of the file's name for all of its blobs' locations.
    let shared_file: Arc<str> = file.into();
    let first = contents.iter().find(|b| !b.is_ascii_whitespace());
    let mut invalid = None;
    if first == Some(&b'{') {
        let read = match reading {
            Reading::OnePassFirst => {
                match read_typed_documents(catalog, &shared_file, contents, detail) {
                    Ok(()) => return Ok(()),
                    Err(Unfinished { read }) => read,
                }
            }
            #[cfg(test)]
            Reading::CarefulOnly => 0,
        };
        let mut stream = serde_json::Deserializer::from_slice(contents).into_iter::<Head>();
        let mut document = 0;
        loop {
            let start = stream.byte_offset();
            let Some(head) = stream.next() else {
                break;
            };
            document += 1;
            let head = head.map_err(|source| ParseError::Json {
                file: file.to_owned(),
                document,
                source,
            })?;
            // Documents the one-pass reader took are only checked again, never added twice.
            if invalid.is_none() && document > read {
                // The document's own text (with the blank before it), to read it typed.
                let text = contents
                    .get(start..stream.byte_offset())
                    .unwrap_or_default();
                let location = || Location::new(shared_file.clone(), document);
                invalid = add_blob(catalog, location(), head, text, detail)
                    .or_else(|err| {
                        if repeats_a_key(&err) {
                            add_blob_again(catalog, location(), text, detail)
                        } else {
                            Err(err)
                        }
                    })
                    .err();
            }
        }
    } else {
        // The YAML iterator repeats a failure forever, so stop at the first one.
        for (index, document) in serde_yaml_ng::Deserializer::from_slice(contents).enumerate() {
            let value = Value::deserialize(document).map_err(|source| ParseError::Yaml {
                file: file.to_owned(),
                document: index + 1,
                source,
            })?;
            if value.is_null() || invalid.is_some() {
                continue;
            }
            let location = Location::new(shared_file.clone(), index + 1);
            invalid = add_blob(catalog, location, Head::of(&value), &value, detail).err();
        }
    }
    invalid.map_or(Ok(()), Err)
}

/// Where [`read_typed_documents`] stopped: the documents before it were added.
struct Unfinished {
    /// How many documents were read and added.
    read: usize,
}

/// Reads a JSON file's documents in one pass each, as long as they are valid packages,
/// channels and bundles (nearly every document of a real catalog), and adds them.
///
/// Reading a document's outline first and then reading it typed (see [`Head`]) scans every
/// byte twice; a document here is read once, into [`RawBlob`], which has every field the
/// three schemas read, typed as they read them. At the first document it cannot take (another
/// schema, a field of the wrong type, a repeated key, an invalid blob, malformed JSON) it
/// stops and says how many it added; the caller reads the rest of the file the careful way,
/// which reports errors with their positions in the file.
///
/// One difference in what is accepted: a number in a field no schema reads is checked for
/// its syntax only, as Go's decoder does for `json.RawMessage`, not for its range.
fn read_typed_documents(
    catalog: &mut Catalog,
    file: &Arc<str>,
    contents: &[u8],
    detail: Detail,
) -> Result<(), Unfinished> {
    // The whole file is checked as UTF-8 once, and then read as text, which serde_json does
    // not check again string by string and value by value (a sixteenth of parsing). A file
    // that is not UTF-8 is left to the careful reader, which says where it is not.
    let Ok(contents) = std::str::from_utf8(contents) else {
        return Err(Unfinished { read: 0 });
    };
    let mut offset = 0;
    let mut read = 0;
    loop {
        let rest = contents.get(offset..).unwrap_or_default();
        match rest.bytes().find(|b| !b.is_ascii_whitespace()) {
            None => return Ok(()),
            // A derived struct also reads a JSON array, by position: not a blob.
            Some(b'{') => {}
            Some(_) => return Err(Unfinished { read }),
        }
        let location = Location::new(file.clone(), read + 1);
        let taken = match detail {
            Detail::Full => read_typed_document::<one_pass::Full>(catalog, rest, location),
            Detail::Resolution => {
                read_typed_document::<one_pass::Resolution>(catalog, rest, location)
            }
        };
        let Some(length) = taken else {
            return Err(Unfinished { read });
        };
        read += 1;
        offset += length;
    }
}

/// Reads the document at the start of `text` and adds it to `catalog` if it is a valid
/// package, channel or bundle: how much of `text` it took, or `None` (and nothing added).
fn read_typed_document<D: KnownDetail>(
    catalog: &mut Catalog,
    text: &str,
    location: Location,
) -> Option<usize> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<RawBlob<D>>();
    let blob = stream.next()?.ok()?;
    blob.add_to(catalog, location, D::DETAIL)
        .then(|| stream.byte_offset())
}

/// A package, channel or bundle document: every field any of the three reads, each with the
/// type and defaults of [`RawPackage`], [`RawChannel`] and [`RawBundle`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "D: KnownDetail"))]
struct RawBlob<'a, D> {
    /// Borrowed from the document: only compared, never kept.
    #[serde(default, borrow)]
    schema: Option<Cow<'a, str>>,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default)]
    default_channel: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    icon: Option<Icon>,
    #[serde(default, deserialize_with = "nullable")]
    entries: Vec<RawEntry>,
    #[serde(default, deserialize_with = "nullable")]
    image: String,
    #[serde(default, borrow, deserialize_with = "nullable")]
    related_images: Vec<RelatedImageText<'a>>,
    /// Interpreted as they are read (see [`one_pass`]).
    #[serde(default, deserialize_with = "nullable")]
    properties: Interpreted<D>,
}

/// A `relatedImages` entry as the one-pass reader reads it: the fields, defaults and errors
/// of [`RelatedImage`], with the text borrowed from the document. A resolution-level read
/// drops related images, so it checks them without copying them (two strings per image, for
/// every bundle of a catalog).
#[derive(Deserialize)]
struct RelatedImageText<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    image: Cow<'a, str>,
}

impl From<RelatedImageText<'_>> for RelatedImage {
    fn from(text: RelatedImageText<'_>) -> Self {
        RelatedImage {
            name: text.name.map(Cow::into_owned),
            image: text.image.into_owned(),
        }
    }
}

impl<D> RawBlob<'_, D> {
    /// Adds the blob to `catalog` if it is a valid package, channel or bundle, with what
    /// [`add_blob`] would have made of it; `false` (and nothing added) otherwise.
    fn add_to(self, catalog: &mut Catalog, mut location: Location, detail: Detail) -> bool {
        location.name = Some(self.name.clone()).filter(|n| !n.is_empty());
        let Some(schema) = self.schema else {
            return false;
        };
        // Only the three schemas below are added; for any other the location is dropped.
        location.schema = Some(schema_name(&schema));
        let added = match schema.as_ref() {
            SCHEMA_PACKAGE => {
                let raw = RawPackage {
                    name: self.name,
                    default_channel: self.default_channel,
                    description: self.description,
                    icon: self.icon,
                    properties: self.properties,
                };
                package_from(location, raw, detail).map(|p| catalog.packages.push(p))
            }
            SCHEMA_CHANNEL => {
                let raw = RawChannel {
                    package: self.package,
                    name: self.name,
                    entries: self.entries,
                    properties: self.properties,
                };
                channel_from(location, raw, detail).map(|c| catalog.channels.push(c))
            }
            SCHEMA_BUNDLE => {
                let raw = RawBundle {
                    package: self.package,
                    name: self.name,
                    image: self.image,
                    related_images: match detail {
                        Detail::Full => self.related_images.into_iter().map(Into::into).collect(),
                        Detail::Resolution => Vec::new(),
                    },
                    properties: self.properties,
                };
                bundle_from(location, raw, detail).map(|b| catalog.bundles.push(b))
            }
            _ => return false,
        };
        added.is_ok()
    }
}

/// A catalog file's path as the parser reads it: without a leading `./` or `/`; `None` for a
/// directory entry (ending in `/`) or an empty path.
pub fn normalize_path(mut path: &str) -> Option<&str> {
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

pub(crate) fn is_index_ignore(path: &str) -> bool {
    path.rsplit('/').next() == Some(INDEX_IGNORE)
}

pub(crate) fn add_ignore(
    ignore: &mut IndexIgnore,
    file: &str,
    contents: &[u8],
) -> Result<(), ParseError> {
    ignore
        .add(file, &String::from_utf8_lossy(contents))
        .map_err(|source| ParseError::IndexIgnore {
            file: file.to_owned(),
            source,
        })
}

/// Whether `error` is a typed read refusing a key given twice in one object.
///
/// Go's decoder, and so operator-registry, takes the last of repeated keys, as reading into a
/// `serde_json::Value` does, but a typed read refuses them. Such a document (opm never writes
/// one) is read again through a value (see [`add_blob_again`]), so it costs time only there.
fn repeats_a_key(error: &ParseError) -> bool {
    let mut cause: Option<&dyn std::error::Error> = Some(error);
    while let Some(error) = cause {
        if let Some(json) = error.downcast_ref::<serde_json::Error>()
            && json.to_string().starts_with("duplicate field `")
        {
            return true;
        }
        cause = error.source();
    }
    false
}

/// A blob's schema for its [`Location`]: the schemas this crate reads are borrowed.
fn schema_name(schema: &str) -> Cow<'static, str> {
    match schema {
        SCHEMA_PACKAGE => Cow::Borrowed(SCHEMA_PACKAGE),
        SCHEMA_CHANNEL => Cow::Borrowed(SCHEMA_CHANNEL),
        SCHEMA_BUNDLE => Cow::Borrowed(SCHEMA_BUNDLE),
        SCHEMA_DEPRECATIONS => Cow::Borrowed(SCHEMA_DEPRECATIONS),
        other => Cow::Owned(other.to_owned()),
    }
}

/// Reads a JSON document through a `serde_json::Value`, where a repeated key counts as its
/// last occurrence.
fn add_blob_again(
    catalog: &mut Catalog,
    location: Location,
    text: &[u8],
    detail: Detail,
) -> Result<(), ParseError> {
    let value: Value = serde_json::from_slice(text).map_err(|source| ParseError::Json {
        file: location.file.to_string(),
        document: location.document,
        source,
    })?;
    add_blob(catalog, location, Head::of(&value), &value, detail)
}

/// A document to read a blob from: the JSON text of one document, read in place, or a YAML
/// document already read into a `serde_json::Value`.
trait Source<'a>: Copy {
    /// Property values until they are interpreted: slices of the JSON text, or values.
    type Value: RawJson + Deserialize<'a>;

    /// The document as `T`; errors carry no position (see [`without_position`]).
    fn read<T: Deserialize<'a>>(self) -> Result<T, serde_json::Error>;

    /// The whole document as a value.
    fn to_value(self) -> Result<Value, serde_json::Error>;
}

impl<'a> Source<'a> for &'a [u8] {
    type Value = &'a RawValue;

    fn read<T: Deserialize<'a>>(self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self).map_err(without_position)
    }

    fn to_value(self) -> Result<Value, serde_json::Error> {
        serde_json::from_slice(self)
    }
}

impl<'a> Source<'a> for &'a Value {
    type Value = Value;

    fn read<T: Deserialize<'a>>(self) -> Result<T, serde_json::Error> {
        T::deserialize(self)
    }

    fn to_value(self) -> Result<Value, serde_json::Error> {
        Ok(self.clone())
    }
}

fn add_blob<'a, S: Source<'a>>(
    catalog: &mut Catalog,
    mut location: Location,
    head: Head,
    source: S,
    detail: Detail,
) -> Result<(), ParseError> {
    let Head::Object {
        schema,
        name,
        package: package_name,
    } = head
    else {
        return Err(ParseError::NotAnObject {
            location: Box::new(location),
        });
    };
    location.name = name.filter(|n| !n.is_empty());
    let Some(schema) = schema.filter(|s| !s.is_empty()) else {
        return Err(ParseError::MissingSchema {
            location: Box::new(location),
        });
    };
    location.schema = Some(schema_name(&schema));

    match schema.as_str() {
        SCHEMA_PACKAGE => catalog.packages.push(package(location, source, detail)?),
        SCHEMA_CHANNEL => catalog.channels.push(channel(location, source, detail)?),
        SCHEMA_BUNDLE => catalog.bundles.push(bundle(location, source, detail)?),
        SCHEMA_DEPRECATIONS => catalog.deprecations.push(deprecations(location, source)?),
        _ => {
            let blob = match detail {
                Detail::Full => source.to_value().map_err(|source| ParseError::Json {
                    file: location.file.to_string(),
                    document: location.document,
                    source,
                })?,
                Detail::Resolution => Value::Null,
            };
            catalog.others.push(Meta {
                package: package_name.filter(|p| !p.is_empty()),
                name: location.name.clone(),
                schema,
                blob,
                location,
            });
        }
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
#[serde(
    rename_all = "camelCase",
    bound(deserialize = "P: Deserialize<'de> + Default")
)]
struct RawPackage<P> {
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default)]
    default_channel: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    icon: Option<Icon>,
    #[serde(default, deserialize_with = "nullable")]
    properties: P,
}

#[derive(Deserialize)]
#[serde(bound(deserialize = "P: Deserialize<'de> + Default"))]
struct RawChannel<P> {
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    entries: Vec<RawEntry>,
    #[serde(default, deserialize_with = "nullable")]
    properties: P,
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
#[serde(
    rename_all = "camelCase",
    bound(deserialize = "P: Deserialize<'de> + Default")
)]
struct RawBundle<P> {
    #[serde(default, deserialize_with = "nullable")]
    package: String,
    #[serde(default, deserialize_with = "nullable")]
    name: String,
    #[serde(default, deserialize_with = "nullable")]
    image: String,
    #[serde(default, deserialize_with = "nullable")]
    related_images: Vec<RelatedImage>,
    #[serde(default, deserialize_with = "nullable")]
    properties: P,
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

/// Reads one document as the typed blob of `schema`.
fn decode<'a, T: Deserialize<'a>>(
    location: &Location,
    schema: &'static str,
    source: impl Source<'a>,
) -> Result<T, ParseError> {
    source.read().map_err(|source| ParseError::Shape {
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

/// A blob's properties as a reader holds them: as read, to be interpreted now, or already
/// interpreted (the one-pass reader's [`Interpreted`]).
trait PropertyList {
    fn interpret(self, location: &Location, detail: Detail) -> Result<Vec<Property>, ParseError>;
}

impl<V: RawJson> PropertyList for Vec<RawProperty<'_, V>> {
    fn interpret(self, location: &Location, detail: Detail) -> Result<Vec<Property>, ParseError> {
        // Pushed into an exact-size list: collecting through `Result` starts small and
        // doubles, and every bundle of a catalog keeps its list.
        let mut properties = Vec::with_capacity(self.len());
        for (index, property) in self.iter().enumerate() {
            properties.push(
                property
                    .interpret(detail)
                    .map_err(|source| ParseError::Property {
                        location: Box::new(location.clone()),
                        index,
                        type_name: property.type_name.clone().into_owned(),
                        source,
                    })?,
            );
        }
        Ok(properties)
    }
}

impl<D> PropertyList for Interpreted<D> {
    fn interpret(self, _: &Location, _: Detail) -> Result<Vec<Property>, ParseError> {
        Ok(self.0)
    }
}

fn package<'a, S: Source<'a>>(
    location: Location,
    source: S,
    detail: Detail,
) -> Result<Package, ParseError> {
    let raw: RawPackage<Vec<RawProperty<'a, S::Value>>> =
        decode(&location, SCHEMA_PACKAGE, source)?;
    package_from(location, raw, detail)
}

fn package_from<P: PropertyList>(
    location: Location,
    raw: RawPackage<P>,
    detail: Detail,
) -> Result<Package, ParseError> {
    require(&location, "name", &raw.name)?;
    let full = detail == Detail::Full;
    Ok(Package {
        name: raw.name,
        default_channel: non_empty(raw.default_channel),
        description: non_empty(raw.description).filter(|_| full),
        icon: raw.icon.filter(|_| full),
        properties: raw.properties.interpret(&location, detail)?,
        location,
    })
}

fn channel<'a, S: Source<'a>>(
    location: Location,
    source: S,
    detail: Detail,
) -> Result<Channel, ParseError> {
    let raw: RawChannel<Vec<RawProperty<'a, S::Value>>> =
        decode(&location, SCHEMA_CHANNEL, source)?;
    channel_from(location, raw, detail)
}

fn channel_from<P: PropertyList>(
    location: Location,
    raw: RawChannel<P>,
    detail: Detail,
) -> Result<Channel, ParseError> {
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
        entries: entries.into(),
        properties: raw.properties.interpret(&location, detail)?,
        location,
    })
}

fn bundle<'a, S: Source<'a>>(
    location: Location,
    source: S,
    detail: Detail,
) -> Result<Bundle, ParseError> {
    let raw: RawBundle<Vec<RawProperty<'a, S::Value>>> = decode(&location, SCHEMA_BUNDLE, source)?;
    bundle_from(location, raw, detail)
}

fn bundle_from<P: PropertyList>(
    location: Location,
    raw: RawBundle<P>,
    detail: Detail,
) -> Result<Bundle, ParseError> {
    require(&location, "package", &raw.package)?;
    require(&location, "name", &raw.name)?;
    let properties = raw.properties.interpret(&location, detail)?;
    let mut packages = properties.iter().filter_map(|p| match p {
        Property::Package(p) => Some(p.as_ref()),
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
        related_images: match detail {
            Detail::Full => raw.related_images,
            Detail::Resolution => Vec::new(),
        },
        version,
        properties,
        location,
    })
}

fn deprecations<'a>(
    location: Location,
    source: impl Source<'a>,
) -> Result<Deprecations, ParseError> {
    let raw: RawDeprecations = decode(&location, SCHEMA_DEPRECATIONS, source)?;
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
    use semver::Version;

    use super::*;

    /// Both readings of one file: the catalog, or the error as a user reads it.
    fn both_readings(contents: impl AsRef<[u8]>, detail: Detail) -> [Result<Catalog, String>; 2] {
        [Reading::OnePassFirst, Reading::CarefulOnly].map(|reading| {
            let mut catalog = Catalog::default();
            parse_documents(&mut catalog, "f.json", contents.as_ref(), detail, reading)
                .map(|()| catalog)
                .map_err(|e| {
                    let mut text = e.to_string();
                    let mut source = std::error::Error::source(&e);
                    while let Some(cause) = source {
                        text.push_str(&format!(": {cause}"));
                        source = cause.source();
                    }
                    text
                })
        })
    }

    #[test]
    fn a_file_that_is_not_utf8_is_refused_as_careful_reading_refuses_it() {
        // The one-pass reader checks the whole file once and reads it as text; a byte that
        // is not UTF-8, even in a value nothing reads, must still be refused, with the
        // careful reader's message.
        let package = br#"{"schema":"olm.package","name":"p"}"#.to_vec();
        let bundle_start = br#"{"schema":"olm.bundle","package":"p","name":"p.v1","image":"i","properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"olm.bundle.object","value":{"data":""#;
        let mut file = package;
        file.extend_from_slice(bundle_start);
        file.extend_from_slice(b"\xff\xfe");
        file.extend_from_slice(br#""}}]}"#);
        for detail in [Detail::Full, Detail::Resolution] {
            let [one_pass, careful] = both_readings(&file, detail);
            let error = careful.as_ref().expect_err("invalid UTF-8 is refused");
            assert!(error.contains("f.json"), "{error}");
            assert_eq!(one_pass, careful, "{detail:?}");
        }
    }

    #[test]
    fn one_pass_reading_gives_what_careful_reading_gives() {
        let package = r#"{"schema":"olm.package","name":"p","defaultChannel":"stable","description":"d","icon":{"base64data":"aGk=","mediatype":"image/png"}}"#;
        let channel = r#"{"schema":"olm.channel","package":"p","name":"stable","entries":[{"name":"p.v1"},{"name":"p.v2","replaces":"p.v1","skips":["p.v0"],"skipRange":"<2.0.0"}]}"#;
        let bundle = r#"{"schema":"olm.bundle","package":"p","name":"p.v1","image":"r/p:1","relatedImages":[{"name":"op","image":"r/op@sha256:3e5"}],"properties":[{"type":"olm.package","value":{"packageName":"p","version":"1.0.0"}},{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"}},{"type":"olm.csv.metadata","value":{"minKubeVersion":"1.25.0","keywords":["a"],"x":{"y":[1,2.5]}}},{"value":{"packageName":"q","versionRange":">=1.0.0"},"type":"olm.package.required"},{"type":"olm.bundle.object","value":{"data":"e30="}},{"type":"vendor.example/thing","value":[1,"two",null]}]}"#;
        let deprecations = r#"{"schema":"olm.deprecations","package":"p","entries":[{"reference":{"schema":"olm.package"},"message":"gone"}]}"#;
        let other = r#"{"schema":"vendor.example/other","package":"p","name":"o","n":[1]}"#;
        let files = [
            // Everything one pass takes, in YAML-like odd spacing.
            format!("{package}\n\n  {channel}{bundle}\n"),
            // A schema one pass leaves to the careful reading, before and after others.
            format!("{deprecations}\n{package}\n{bundle}"),
            format!("{package}\n{other}\n{bundle}"),
            // Fields of the wrong type in a field the schema does not read, or does.
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v2","image":"i","entries":5,"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"2.0.0"}}}}]}}"#
            ),
            format!(r#"{package}{{"schema":"olm.package","name":7}}"#),
            // A repeated key (the last counts), an invalid blob, then malformed JSON.
            format!(r#"{{"schema":"olm.package","name":"a","name":"b"}}{bundle}"#),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v3","properties":[]}}{bundle}"#
            ),
            format!(r#"{package}{{"schema":"olm.bundle","package":"p",]}}{bundle}"#),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"x","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"v1"}}}}]}}{{"schema":"olm.package","name":"z""#
            ),
            // Properties the one-pass reader interprets as it reads them, or leaves to the
            // careful reader: every known type; an escaped type; a null, missing or extra
            // value; an invalid version, range, constraint and OpenShift version.
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v4","image":"i","properties":[{}]}}"#,
                [
                    r#"{"type":"olm.package","value":{"packageName":"p","version":"4.0.0","release":""}}"#,
                    r#"{"type":"olm.gvk.required","value":{"group":"g","kind":"K","version":"v1"}}"#,
                    r#"{"type":"olm.constraint","value":{"failureMessage":"f","package":{"packageName":"q","versionRange":">=1"}}}"#,
                    r#"{"type":"olm.maxOpenShiftVersion","value":4.12}"#,
                    r#"{"type":"olm.maxOpenShiftVersion","value":"4.13"}"#,
                    r#"{"type":"vendor.example/null","value":null}"#,
                    r#"{"type":"olm.csv.metadata","value":{"annotations":{"a":"b"},"installModes":[{"type":"AllNamespaces","supported":true}]}}"#,
                ]
                .join(",")
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v5","image":"i","properties":[{{"type":"olm.p\u0061ckage","value":{{"packageName":"p","version":"5.0.0"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v6","image":"i","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"6.0.0"}},"extra":1}},{{"type":"vendor.example/none"}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v7","image":"i","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"7.0.0"}}}},{{"type":"olm.package.required","value":{{"packageName":"q","versionRange":"not a range"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v8","image":"i","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"8.0.0"}}}},{{"type":"olm.maxOpenShiftVersion","value":true}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v9","image":"i","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"9.0.0"}}}},{{"type":"olm.constraint","value":{{"cel":{{"rule":"x"}},"all":{{}}}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v10","image":"i","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"10.0.0"}}}},{{"type":"olm.csv.metadata","value":{{"keywords":"not a list"}}}}]}}"#
            ),
            // Related images, which a resolution-level read checks without keeping: escaped
            // text, a null name or list, an entry by position, and a missing image, a name of
            // the wrong type, a repeated field.
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v11","image":"i","relatedImages":[{{"name":"op\u0065rator","image":"r/op\/x"}},{{"name":null,"image":"r/y"}},["n","r/z"]],"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"11.0.0"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v12","image":"i","relatedImages":null,"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"12.0.0"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v13","image":"i","relatedImages":[{{"name":"op"}}],"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"13.0.0"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v14","image":"i","relatedImages":[{{"name":5,"image":"r/x"}}],"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"14.0.0"}}}}]}}"#
            ),
            format!(
                r#"{package}{{"schema":"olm.bundle","package":"p","name":"p.v15","image":"i","relatedImages":[{{"image":"r/x","image":"r/y"}}],"properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"15.0.0"}}}}]}}"#
            ),
            // Not objects, no schema, a null schema.
            format!("{package}[1,2]"),
            format!(r#"{package}{{"name":"n"}}{{"schema":null}}"#),
            String::new(),
        ];
        let mut errors = 0;
        for file in &files {
            for detail in [Detail::Full, Detail::Resolution] {
                let [one_pass, careful] = both_readings(file, detail);
                errors += usize::from(careful.is_err());
                assert_eq!(one_pass, careful, "{detail:?} {file}");
            }
        }
        // The table covers both outcomes.
        assert!(errors >= 8 && errors < files.len() * 2, "{errors} errors");
    }

    #[test]
    fn normalize_drops_leading_dots_and_slashes_and_skips_directories() {
        assert_eq!(normalize_path("./a/b.yaml"), Some("a/b.yaml"));
        assert_eq!(normalize_path("/./a.json"), Some("a.json"));
        assert_eq!(normalize_path("dir/"), None);
        assert_eq!(normalize_path("./"), None);
    }

    fn documents(file: &str, contents: &[u8]) -> Vec<usize> {
        let mut catalog = Catalog::default();
        parse_into(&mut catalog, file, contents).unwrap();
        catalog.others.iter().map(|m| m.location.document).collect()
    }

    #[test]
    fn empty_yaml_documents_are_counted_but_skipped() {
        let docs = documents("f.yaml", b"---\n---\nschema: x\n");
        assert_eq!(docs.len(), 1);
        assert!(
            docs[0] > 1,
            "document number {} counts the empty ones",
            docs[0]
        );
    }

    #[test]
    fn a_repeated_key_counts_as_its_last_occurrence_as_in_go() {
        let bundle = br#"{"schema":"olm.bundle","package":"p","name":"p.v0","name":"p.v1",
            "image":"r/p:1","properties":[{"type":"olm.package",
            "value":{"packageName":"p","version":"0.1.0","version":"1.0.0"}}]}"#;
        for detail in [Detail::Full, Detail::Resolution] {
            let mut catalog = Catalog::default();
            parse_into_with(&mut catalog, "b.json", bundle, detail).unwrap();
            let [bundle] = catalog.bundles.as_slice() else {
                panic!("{:?}", catalog.bundles);
            };
            assert_eq!(bundle.name, "p.v1");
            assert_eq!(bundle.version, Version::new(1, 0, 0));
            assert_eq!(bundle.location.name.as_deref(), Some("p.v1"));
        }
    }

    #[test]
    fn a_malformed_document_is_reported_before_an_invalid_blob_ahead_of_it() {
        let mut catalog = Catalog::default();
        let err = parse_into(&mut catalog, "f.json", b"{}\n{\"schema\":").unwrap_err();
        assert!(
            matches!(err, ParseError::Json { document: 2, .. }),
            "{err:?}"
        );
        let err = parse_into(&mut catalog, "f.yaml", b"name: x\n---\n[").unwrap_err();
        assert!(
            matches!(err, ParseError::Yaml { document: 2, .. }),
            "{err:?}"
        );
        let err = parse_into(&mut catalog, "f.json", b"{}\n{\"schema\":\"x\"}").unwrap_err();
        assert!(matches!(err, ParseError::MissingSchema { .. }), "{err:?}");
    }

    #[test]
    fn concatenated_json_objects_are_separate_documents() {
        let docs = documents(
            "f.json",
            b" {\"schema\":\"a\"}\n{\"schema\":\"b\"}{\"schema\":\"c\"}",
        );
        assert_eq!(docs, vec![1, 2, 3]);
    }
}
