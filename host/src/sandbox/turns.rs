//! A reactor tool run in turns as a session's resident driver (`wit/resident.rs`): its
//! instance and store between turns, its start-up, and copying its state.

use std::any::Any;
use std::sync::Arc;

use wasmtime::component::Instance;
use wasmtime::Store;

use super::sandbox::StoreState;
use super::turn_doors::TurnDoors;
use crate::state::{InstanceImage, LiveState, StateError, Taking};
use crate::wit::resident::{AtRest, Turn};

/// The tool's instance between turns.
pub struct ToolAtRest {
    store: Store<StoreState>,
    instance: Instance,
    doors: Arc<TurnDoors>,
    /// What it was once its start turns ran.
    startup: Option<LiveState>,
}

impl ToolAtRest {
    pub fn new(store: Store<StoreState>, instance: Instance, doors: Arc<TurnDoors>) -> Self {
        ToolAtRest {
            store,
            instance,
            doors,
            startup: None,
        }
    }

    /// Notes what the instance is now, after its start turns: its images are taken
    /// against it.
    pub async fn record_startup(&mut self) {
        let Some(state) = &self.doors.state else {
            return;
        };
        let resources = self.store.data_mut().live_resources();
        match state
            .startup(&mut self.store, &self.instance, resources)
            .await
        {
            Ok(startup) => self.startup = Some(startup),
            Err(e) => tracing::warn!("no snapshots of this session's interpreter: {e}"),
        }
    }

    /// The interpreter's state, taken out of the instance.
    pub async fn capture(&mut self, taking: Taking) -> Result<InstanceImage, StateError> {
        let (Some(state), Some(live)) = (&self.doors.state, &mut self.startup) else {
            return Err(StateError::NoDoors);
        };
        let resources = self.store.data_mut().live_resources();
        state
            .capture(&mut self.store, &self.instance, live, resources, taking)
            .await
    }

    /// Writes `image` into the instance, fresh past its start turns.
    pub async fn restore(&mut self, image: &InstanceImage) -> Result<(), StateError> {
        let (Some(state), Some(live)) = (&self.doors.state, &mut self.startup) else {
            return Err(StateError::NoDoors);
        };
        state
            .restore(&mut self.store, &self.instance, live, image)
            .await
    }

    /// What a copy of a session runs once made.
    pub fn after_fork(&self) -> Option<String> {
        self.doors.after_fork.clone()
    }
}

impl AtRest for ToolAtRest {
    fn turn(mut self: Box<Self>, program: String) -> Turn {
        Box::pin(async move {
            let status = async {
                let turn = self
                    .instance
                    .get_typed_func::<(String,), (i32,)>(&mut self.store, &self.doors.turn)?;
                Ok(turn.call_async(&mut self.store, (program,)).await?.0)
            }
            .await;
            (self as Box<dyn AtRest>, status)
        })
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
