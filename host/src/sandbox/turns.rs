//! A reactor tool run in turns as a session's resident driver (`wit/resident.rs`): its
//! instance and store between turns, its start-up, and copying its state.

use std::any::Any;
use std::mem::ManuallyDrop;
use std::sync::Arc;

use wasmtime::component::Instance;
use wasmtime::Store;

use super::sandbox::StoreState;
use super::turn_doors::TurnDoors;
use crate::state::{InstanceImage, LiveState, Placement, StateError, Taking};
use crate::wit::resident::{AtRest, Turn};

/// What is told, as a tool goes, where its memories lay (while they are still mapped).
pub type PageLearner = Box<dyn FnOnce(&[Placement]) + Send>;

/// The tool's instance between turns.
pub struct ToolAtRest {
    /// Dropped in `Drop`: on the reaper's thread when a learner waits for its pages.
    store: ManuallyDrop<Store<StoreState>>,
    instance: Instance,
    doors: Arc<TurnDoors>,
    /// What it was once its start turns ran.
    startup: Option<LiveState>,
    learner: Option<PageLearner>,
}

impl ToolAtRest {
    pub fn new(store: Store<StoreState>, instance: Instance, doors: Arc<TurnDoors>) -> Self {
        ToolAtRest {
            store: ManuallyDrop::new(store),
            instance,
            doors,
            startup: None,
            learner: None,
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
            .startup(&mut *self.store, &self.instance, resources)
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
            .capture(&mut *self.store, &self.instance, live, resources, taking)
            .await
    }

    /// Writes `image` into the instance, fresh past its start turns.
    pub async fn restore(&mut self, image: &InstanceImage) -> Result<(), StateError> {
        let (Some(state), Some(live)) = (&self.doors.state, &mut self.startup) else {
            return Err(StateError::NoDoors);
        };
        state
            .restore(&mut *self.store, &self.instance, live, image)
            .await
    }

    /// Where its memories lay once its start turns ran.
    pub fn placements(&self) -> Vec<Placement> {
        self.startup
            .as_ref()
            .map(|live| live.placements().collect())
            .unwrap_or_default()
    }

    /// Has `learner` told where its memories lay as the tool goes, before they are
    /// unmapped (`run/warm_pages.rs`).
    pub fn learn_on_drop(&mut self, learner: PageLearner) {
        self.learner = Some(learner);
    }

    /// What a copy of a session runs once made.
    pub fn after_fork(&self) -> Option<String> {
        self.doors.after_fork.clone()
    }
}

/// A tool's store as it goes, its learner told first.
struct Learning {
    learner: Option<PageLearner>,
    places: Vec<Placement>,
    _store: Store<StoreState>,
}

impl Drop for Learning {
    fn drop(&mut self) {
        if let Some(learner) = self.learner.take() {
            learner(&self.places);
        }
    }
}

impl Drop for ToolAtRest {
    fn drop(&mut self) {
        // SAFETY: `store` is taken once, here, and not used again.
        let store = unsafe { ManuallyDrop::take(&mut self.store) };
        match self.learner.take() {
            Some(learner) => {
                let bytes = store.data().sandbox.memory.used();
                let learning = Learning {
                    learner: Some(learner),
                    places: self.placements(),
                    _store: store,
                };
                super::reaper::put_away(learning, bytes);
            }
            None => drop(store),
        }
    }
}

impl AtRest for ToolAtRest {
    fn turn(mut self: Box<Self>, program: String) -> Turn {
        Box::pin(async move {
            let status = async {
                let turn = self
                    .instance
                    .get_typed_func::<(String,), (i32,)>(&mut *self.store, &self.doors.turn)?;
                Ok(turn.call_async(&mut *self.store, (program,)).await?.0)
            }
            .await;
            (self as Box<dyn AtRest>, status)
        })
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }
}
