//! [`Extensions`]: typed values a host hands every tool call.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// A map from type to one value of that type, shared by every call the
/// loop makes: how a session hands its tools the working directory, the
/// file operations, the mutation queue or its settings without the loop
/// knowing any of those types.
///
/// Cheap to clone (one `Arc`); inserting into a clone copies the map first,
/// so a value added for one call never leaks into another.
///
/// ```
/// use agent_core::Extensions;
///
/// struct Greeting(&'static str);
///
/// let extensions = Extensions::new().with(Greeting("hello")).with(42u32);
/// assert_eq!(extensions.get::<Greeting>().map(|g| g.0), Some("hello"));
/// assert_eq!(extensions.get::<u32>(), Some(&42));
/// assert!(extensions.get::<String>().is_none());
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same map with `value` stored under its type (replacing any
    /// earlier value of that type).
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Stores `value` under its type, replacing any earlier value of that type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was stored.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values
            .get(&TypeId::of::<T>())
            .and_then(|v| v.downcast_ref::<T>())
    }

    /// Whether a value of type `T` is stored.
    pub fn contains<T: Any + Send + Sync>(&self) -> bool {
        self.values.contains_key(&TypeId::of::<T>())
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl std::fmt::Debug for Extensions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish()
    }
}
