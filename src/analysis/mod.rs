//! Analysis of results: what tokens cost ([`prices`]), what repeated attempts add up to
//! ([`attempts`]: the reductions), the
//! summary of one evaluation ([`summary`]), the official metric against a gold file ([`score`]),
//! two evaluations paired ([`compare`]) and the HTML page of several ([`report`]).

pub mod prices;
pub mod attempts;
pub mod summary;
pub mod score;
pub mod compare;
pub mod report;
