//! Fill-in-the-middle for editors' completion: the provider and model a choice selects, asked
//! for the text between a prefix and a suffix in the model's own FIM prompt. Kept out of the
//! history like any completion. It must never write a chat prompt: a caller that gets `None`
//! (a model without FIM tokens, a provider that cannot tell) writes its own.

use super::Framework;
use crate::error::Result;
use crate::provider::{Infill, Infilled};
use crate::select::ModelChoice;

impl Framework {
    /// The middle `choice`'s model writes between `request.prefix` and `request.suffix`, or
    /// `None` when that model has no FIM prompt. Dropping the future stops the generation.
    pub async fn fill_in_middle(
        &self,
        choice: &ModelChoice,
        request: &Infill,
    ) -> Result<Option<Infilled>> {
        let selector = self.selector();
        let sel = selector.select(choice)?;
        let provider = selector.provider(&sel)?;
        let model = self
            .registry
            .build_model(
                &provider,
                sel.model_configuration.as_deref(),
                sel.model.as_deref(),
                None,
            )?
            .model;
        provider.provider.fill_in_middle(&model, request).await
    }
}
