//! The model-choice fields, written once: what a request names its model by (an `agent` of
//! the config, or a `serviceProvider` with a `modelConfiguration` or a `model`).
//!
//! The daemon's `CreateConversation` and `CreateAIAgent` params carry them among their own
//! fields and refuse unknown ones (`deny_unknown_fields`), which serde's `flatten` cannot do: so
//! [`with_model_choice!`](crate::with_model_choice) writes these fields into each struct it
//! declares, the same fields and attributes every time (their schemas stay field for field what
//! they were). It owns the field names only; the core decides what they choose
//! (`select::ModelChoice::from_fields`) and must never see this macro.

/// Declares a struct with the model-choice fields among its own, and a `take_model_choice`
/// that moves them out as a [`ModelChoiceFields`]: `struct S { FIELDS }` puts them first,
/// `struct S { BEFORE } then { AFTER }` between the two groups (the order serde names the
/// fields in when it refuses an unknown one). The struct must derive `serde::Deserialize`
/// (the fields are `#[serde(default)]`); they carry no doc comment, as a doc comment would
/// become a description in the schemas.
#[macro_export]
macro_rules! with_model_choice {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($before:tt)*
        } then {
            $($after:tt)*
        }
    ) => {
        $(#[$meta])*
        $vis struct $name {
            $($before)*
            #[serde(default)]
            $vis agent: ::core::option::Option<::std::string::String>,
            #[serde(default)]
            $vis service_provider: ::core::option::Option<::std::string::String>,
            #[serde(default)]
            $vis model_configuration: ::core::option::Option<::std::string::String>,
            #[serde(default)]
            $vis model: ::core::option::Option<::std::string::String>,
            $($after)*
        }

        impl $name {
            /// The model-choice fields, moved out (each left `None`).
            $vis fn take_model_choice(&mut self) -> $crate::choice::ModelChoiceFields {
                $crate::choice::ModelChoiceFields {
                    agent: self.agent.take(),
                    service_provider: self.service_provider.take(),
                    model_configuration: self.model_configuration.take(),
                    model: self.model.take(),
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $($fields:tt)*
        }
    ) => {
        $crate::with_model_choice! {
            $(#[$meta])*
            $vis struct $name {} then { $($fields)* }
        }
    };
}

with_model_choice! {
    /// The model-choice fields alone, as [`with_model_choice!`](crate::with_model_choice)'s
    /// structs hand them to the core.
    #[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
    pub struct ModelChoiceFields {}
}
