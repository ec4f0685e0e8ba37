//! What a supervisor may do: flip her own flag, say she is on it, and the
//! Redis ACL rules that let her do exactly that.

pub mod ack;
pub mod acl;
pub mod flags;
