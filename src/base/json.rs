//! What the crate says about JSON values it did not expect.

use serde_json::Value;

/// `a number`, `an object`, …: a value's JSON type as an error message names it.
pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
