//! Activator classes: how the entities of a resolution become child BundleDeployments.
//!
//! An ActiveResolution names its class in the `deppy.io/activator-class`
//! annotation. The core (catalog lookup, ResolveSet ConfigMaps, the wrapper
//! BundleDeployment, history, status) is the same for every class; a class only decides
//! which BundleDeployments install one selected bundle. A new class is a new module here
//! and one line in [`Classes::builtin`].

pub mod platform_operator;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use rukpak_api::BundleDeployment;

use deppy_api::{ActiveResolution, Selection};

pub use platform_operator::PlatformOperatorClass;

/// One selected bundle, found in its catalog.
#[derive(Debug, Clone)]
pub struct Entity {
    /// The selection it was found for.
    pub selection: Selection,
    /// The bundle, as the catalog's bundle index lists it (name, version, image,
    /// `olm.maxOpenShiftVersion`).
    pub bundle: deppy_api::IndexedBundle,
}

/// A selected bundle that a class cannot install.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to activate bundle {bundle} of selection {selection}: {reason}")]
pub struct ClassError {
    /// The selection.
    pub selection: String,
    /// The bundle's name.
    pub bundle: String,
    /// Why it cannot be installed.
    pub reason: String,
}

/// Turns entities into child BundleDeployments.
pub trait ActivatorClass: Send + Sync + fmt::Debug {
    /// The value of the activator-class annotation this class serves, e.g. `PlatformOperator`.
    fn name(&self) -> &'static str;

    /// The child BundleDeployments that install `entity`. Names must be stable for a
    /// package (a pivot updates them in place) and at most
    /// [`rukpak_api::BUNDLE_DEPLOYMENT_NAME_MAX`] characters. The core adds the
    /// resolution's labels to `metadata.labels` and `spec.template.metadata.labels`, and
    /// sets `spec.serviceAccount` to the resolution's install identity.
    fn bundle_deployments(&self, entity: &Entity) -> Result<Vec<BundleDeployment>, ClassError>;

    /// The children of `entity` within `resolution`: [`Self::bundle_deployments`], which a
    /// class may complete from the resolution (e.g. settings its author asked for). The
    /// core calls this one.
    fn children(
        &self,
        resolution: &ActiveResolution,
        entity: &Entity,
    ) -> Result<Vec<BundleDeployment>, ClassError> {
        let _ = resolution;
        self.bundle_deployments(entity)
    }

    /// Annotations for the wrapper BundleDeployment of a resolution of this class.
    fn wrapper_annotations(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
}

/// The classes one activator process serves, by name.
#[derive(Debug, Clone, Default)]
pub struct Classes {
    classes: BTreeMap<&'static str, Arc<dyn ActivatorClass>>,
}

/// A class name that no built-in class answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to find activator class {name:?}: the known classes are {known}")]
pub struct UnknownClass {
    /// The name asked for.
    pub name: String,
    /// The built-in names, comma separated.
    pub known: String,
}

impl Classes {
    /// Every class this crate provides.
    pub fn builtin() -> Self {
        let mut classes = Self::default();
        classes.insert(Arc::new(PlatformOperatorClass));
        classes
    }

    /// The built-in classes named in `names` (e.g. from `--classes`).
    pub fn select(names: &[String]) -> Result<Self, UnknownClass> {
        let builtin = Self::builtin();
        let mut selected = Self::default();
        for name in names {
            let class = builtin.get(name).ok_or_else(|| UnknownClass {
                name: name.clone(),
                known: builtin.names().collect::<Vec<_>>().join(", "),
            })?;
            selected.insert(class);
        }
        Ok(selected)
    }

    /// Adds (or replaces) a class.
    pub fn insert(&mut self, class: Arc<dyn ActivatorClass>) {
        self.classes.insert(class.name(), class);
    }

    /// The class named `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn ActivatorClass>> {
        self.classes.get(name).cloned()
    }

    /// The names served, sorted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.classes.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_known_classes_can_be_selected() {
        let classes = Classes::select(&["PlatformOperator".to_owned()]).unwrap();
        assert_eq!(classes.names().collect::<Vec<_>>(), ["PlatformOperator"]);
        assert!(classes.get("PlatformOperator").is_some());
        let err = Classes::select(&["Other".to_owned()]).unwrap_err();
        assert_eq!(err.name, "Other");
        assert!(err.to_string().contains("PlatformOperator"), "{err}");
    }
}
