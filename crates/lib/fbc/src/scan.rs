//! Reading a JSON document's outline without keeping the document.
//!
//! Parsing reads each JSON document twice: once through [`Head`], which checks the syntax of
//! the whole document (as a `serde_json::Value` would, numbers in range included) but keeps
//! only its `schema`, `name` and `package`, and once into the typed form its schema calls
//! for. Nothing of the document is held in between, so a catalog costs what its typed model
//! costs, not what its JSON text does.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// The outline of one document.
#[derive(Debug)]
pub(crate) enum Head {
    /// The document is not an object (and so not a blob).
    NotAnObject,
    /// An object, with its `schema`, `name` and `package` when they are strings. A key given
    /// twice counts as its last occurrence, as when reading into a `serde_json::Value`.
    Object {
        schema: Option<String>,
        name: Option<String>,
        package: Option<String>,
    },
}

impl Head {
    /// The outline of a document already read into a value (a YAML document).
    pub(crate) fn of(value: &Value) -> Self {
        let Value::Object(object) = value else {
            return Head::NotAnObject;
        };
        let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
        Head::Object {
            schema: text("schema"),
            name: text("name"),
            package: text("package"),
        }
    }
}

impl<'de> Deserialize<'de> for Head {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(HeadVisitor)
    }
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = Head;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a catalog blob")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Head, A::Error> {
        let (mut schema, mut name, mut package) = (None, None, None);
        while let Some(key) = map.next_key::<Key>()? {
            let slot = match key {
                Key::Schema => &mut schema,
                Key::Name => &mut name,
                Key::Package => &mut package,
                Key::Other => {
                    map.next_value::<Skip>()?;
                    continue;
                }
            };
            *slot = map.next_value::<Text>()?.0;
        }
        Ok(Head::Object {
            schema,
            name,
            package,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Head, A::Error> {
        SkipVisitor.visit_seq(seq)?;
        Ok(Head::NotAnObject)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Head, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }

    fn visit_none<E: de::Error>(self) -> Result<Head, E> {
        Ok(Head::NotAnObject)
    }
}

/// The keys [`Head`] keeps.
enum Key {
    Schema,
    Name,
    Package,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }

            fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
                Ok(match key {
                    "schema" => Key::Schema,
                    "name" => Key::Name,
                    "package" => Key::Package,
                    _ => Key::Other,
                })
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// Any value, kept when it is a string.
struct Text(Option<String>);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<Text, E> {
                Ok(Text(Some(text.to_owned())))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text, A::Error> {
                SkipVisitor.visit_map(map)?;
                Ok(Text(None))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Text, A::Error> {
                SkipVisitor.visit_seq(seq)?;
                Ok(Text(None))
            }

            fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text, D::Error> {
                deserializer.deserialize_any(self)
            }

            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Text, E> {
                Ok(Text(None))
            }

            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Text, E> {
                Ok(Text(None))
            }

            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Text, E> {
                Ok(Text(None))
            }

            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Text, E> {
                Ok(Text(None))
            }

            fn visit_unit<E: de::Error>(self) -> Result<Text, E> {
                Ok(Text(None))
            }

            fn visit_none<E: de::Error>(self) -> Result<Text, E> {
                Ok(Text(None))
            }
        }
        deserializer.deserialize_any(TextVisitor)
    }
}

/// Any value, read and checked but not kept.
///
/// Unlike [`serde::de::IgnoredAny`], which serde_json skips over by its syntax alone, this
/// reads every value as `serde_json::Value` would (a number out of range is an error), so
/// that a document is accepted or refused exactly as before it was read in one piece. Strings
/// are only borrowed or read into serde_json's scratch buffer, never allocated.
pub(crate) struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Skip, D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }

    fn visit_none<E: de::Error>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
}

/// `error` without its line and column.
///
/// Typed values are read from one document's (or one property's) text, so positions would
/// count from there, not from the file; the location in [`crate::ParseError`] says where the
/// blob is. Without a position the message is also the one reading from a
/// `serde_json::Value` gave.
pub(crate) fn without_position(error: serde_json::Error) -> serde_json::Error {
    if error.line() == 0 {
        return error;
    }
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    de::Error::custom(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(text: &str) -> Result<Head, serde_json::Error> {
        serde_json::from_str(text)
    }

    #[test]
    fn the_head_keeps_string_schema_name_and_package_only() {
        let Head::Object {
            schema,
            name,
            package,
        } = head(r#"{"schema":"olm.bundle","x":{"y":[1,2.5,null,true]},"name":5,"package":"p"}"#)
            .unwrap()
        else {
            panic!("an object");
        };
        assert_eq!(schema.as_deref(), Some("olm.bundle"));
        assert_eq!(name, None);
        assert_eq!(package.as_deref(), Some("p"));
    }

    #[test]
    fn a_repeated_key_counts_as_its_last_occurrence() {
        let Head::Object { name, .. } = head(r#"{"name":"a","name":"b"}"#).unwrap() else {
            panic!("an object");
        };
        assert_eq!(name.as_deref(), Some("b"));
    }

    #[test]
    fn documents_that_are_not_objects_are_read_through() {
        for text in ["[1,{\"a\":[]}]", "\"x\"", "3", "-3", "1.5", "true", "null"] {
            assert!(matches!(head(text).unwrap(), Head::NotAnObject), "{text}");
        }
    }

    #[test]
    fn numbers_out_of_range_are_refused_even_where_nothing_is_kept() {
        let err = head(r#"{"schema":"x","ignored":[1e400]}"#).unwrap_err();
        assert!(err.to_string().contains("number out of range"), "{err}");
    }

    #[test]
    fn positions_are_dropped_from_messages() {
        let err = serde_json::from_str::<Vec<String>>("[1]").unwrap_err();
        assert!(err.line() > 0);
        assert_eq!(
            without_position(err).to_string(),
            "invalid type: integer `1`, expected a string"
        );
    }
}
