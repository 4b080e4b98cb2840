//! Properties read and interpreted in the same pass as the blob that carries them.
//!
//! The careful reader holds each property's value as a slice of JSON text and interprets it
//! afterwards, which scans every value twice: a bundle's `olm.csv.metadata` and inlined
//! manifests are most of a catalog's bytes. The one-pass reader (see `read_typed_documents`)
//! reads values straight into what [`interpret`] makes of them instead. It is stricter than
//! the careful reader: a property whose `type` does not come first, that has no `value`, that
//! has any other key, or whose value is invalid fails the whole blob, and the careful reader
//! then reads the file from that blob on and reports what is wrong, where. So whatever the
//! one-pass reader accepts, the careful reader accepts and reads the same way.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::detail::Detail;
use crate::property::{Property, PropertyError, ValueSource, interpret, shape_error};

/// A [`Detail`] known when the reader's type is chosen.
pub(crate) trait KnownDetail {
    const DETAIL: Detail;
}

/// [`Detail::Full`] as a type.
pub(crate) struct Full;

/// [`Detail::Resolution`] as a type.
pub(crate) struct Resolution;

impl KnownDetail for Full {
    const DETAIL: Detail = Detail::Full;
}

impl KnownDetail for Resolution {
    const DETAIL: Detail = Detail::Resolution;
}

/// A blob's `properties`, interpreted as they are read.
pub(crate) struct Interpreted<D>(pub(crate) Vec<Property>, PhantomData<D>);

impl<D> Default for Interpreted<D> {
    fn default() -> Self {
        Self(Vec::new(), PhantomData)
    }
}

impl<'de, D: KnownDetail> Deserialize<'de> for Interpreted<D> {
    fn deserialize<De: Deserializer<'de>>(deserializer: De) -> Result<Self, De::Error> {
        deserializer.deserialize_seq(ListVisitor(PhantomData))
    }
}

struct ListVisitor<D>(PhantomData<D>);

impl<'de, D: KnownDetail> Visitor<'de> for ListVisitor<D> {
    type Value = Interpreted<D>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of properties")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Interpreted<D>, A::Error> {
        let mut properties = Vec::new();
        while let Some(property) = seq.next_element_seed(PropertySeed::<D>(PhantomData))? {
            properties.push(property);
        }
        // Every bundle of a catalog keeps its list: no room left over.
        properties.shrink_to_fit();
        Ok(Interpreted(properties, PhantomData))
    }
}

struct PropertySeed<D>(PhantomData<D>);

impl<'de, D: KnownDetail> DeserializeSeed<'de> for PropertySeed<D> {
    type Value = Property;

    fn deserialize<De: Deserializer<'de>>(self, deserializer: De) -> Result<Property, De::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, D: KnownDetail> Visitor<'de> for PropertySeed<D> {
    type Value = Property;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property: type, then value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Property, A::Error> {
        let not_one_pass = || de::Error::custom("left to the careful reader");
        // Borrowed, so a key or type written with escapes is left to the careful reader too.
        if map.next_key::<&str>()? != Some("type") {
            return Err(not_one_pass());
        }
        let type_name: &str = map.next_value()?;
        if map.next_key::<&str>()? != Some("value") {
            return Err(not_one_pass());
        }
        let mut source = FromMap {
            map: &mut map,
            read: false,
        };
        let property = interpret(type_name, &mut source, D::DETAIL)
            .map_err(|error| de::Error::custom(error.to_string()))?;
        if !source.read || map.next_key::<IgnoredAny>()?.is_some() {
            return Err(not_one_pass());
        }
        Ok(property)
    }
}

/// A property's value read from the map that holds it, right after its `value` key.
struct FromMap<'m, A> {
    map: &'m mut A,
    /// Whether the value was read: [`interpret`] reads it once, whatever the type.
    read: bool,
}

impl<'de, A: MapAccess<'de>> FromMap<'_, A> {
    fn next<T: Deserialize<'de>>(&mut self, type_name: &str) -> Result<T, PropertyError> {
        self.read = true;
        // The message is never shown: the careful reader reads this blob again.
        self.map
            .next_value()
            .map_err(|error| shape_error(type_name, de::Error::custom(error)))
    }
}

impl<'de, A: MapAccess<'de>> ValueSource for FromMap<'_, A> {
    fn shape<T: DeserializeOwned>(&mut self, type_name: &str) -> Result<T, PropertyError> {
        self.next(type_name)
    }

    fn value(&mut self, type_name: &str) -> Result<Value, PropertyError> {
        self.next(type_name)
    }

    fn skip(&mut self, type_name: &str) -> Result<(), PropertyError> {
        self.next::<IgnoredAny>(type_name).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn read<D: KnownDetail>(text: &str) -> Result<Vec<Property>, serde_json::Error> {
        serde_json::from_str::<Interpreted<D>>(text).map(|list| list.0)
    }

    #[test]
    fn properties_in_the_usual_shape_are_interpreted_as_they_are_read() {
        let text = r#"[{"type":"olm.package","value":{"packageName":"p","version":"1.2.3"}},
            {"type":"olm.csv.metadata","value":{"minKubeVersion":"1.28.0","description":"long"}},
            {"type":"olm.bundle.object","value":{"data":"e30="}}]"#;
        let resolution = read::<Resolution>(text).unwrap();
        assert_eq!(resolution.len(), 3);
        assert!(matches!(&resolution[0], Property::Package(p) if p.version.to_string() == "1.2.3"));
        assert!(
            matches!(&resolution[1], Property::CsvMinKubeVersion(Some(v)) if v.as_ref() == "1.28.0")
        );
        assert!(
            matches!(&resolution[2], Property::Omitted { type_name } if type_name == "olm.bundle.object")
        );
        let full = read::<Full>(text).unwrap();
        assert!(
            matches!(&full[1], Property::CsvMetadata(m) if m.description.as_deref() == Some("long"))
        );
        assert!(matches!(&full[2], Property::Other { value, .. } if value["data"] == "e30="));
    }

    #[test]
    fn any_other_shape_is_left_to_the_careful_reader() {
        for text in [
            // Value first, no value, another key, an escaped type, an invalid value.
            r#"[{"value":{"group":"g","kind":"K","version":"v1"},"type":"olm.gvk"}]"#,
            r#"[{"type":"olm.gvk"}]"#,
            r#"[{"type":"olm.gvk","value":{"group":"g","kind":"K","version":"v1"},"x":1}]"#,
            r#"[{"type":"olm.\u0067vk","value":{"group":"g","kind":"K","version":"v1"}}]"#,
            r#"[{"type":"olm.package","value":{"packageName":"p","version":"one"}}]"#,
        ] {
            assert!(read::<Resolution>(text).is_err(), "{text}");
            assert!(read::<Full>(text).is_err(), "{text}");
        }
    }
}
