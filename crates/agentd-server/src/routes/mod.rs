//! The HTTP routes, one router per resource, merged in `crate::router`.

pub(crate) mod events;
pub(crate) mod health;
pub(crate) mod sessions;
pub(crate) mod turns;
