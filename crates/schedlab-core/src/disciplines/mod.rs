//! One file per discipline. Each file's header cites the paper and section it implements and
//! maps the paper's pseudo-code names to the code's.

pub mod adaptive;
pub mod aliquem;
pub mod drr;
pub mod drr_plus;
pub mod drr_plusplus;
pub mod dwcs;
pub mod dynamic_priority;
pub mod ewrr;
pub mod fifo;
pub mod priority;
pub mod qfq;
pub mod scfq;
pub mod srr;
pub mod stfq;
pub mod vd;
pub mod virtual_clock;
pub mod wf2q_plus;
pub mod wfq;
pub mod wrr;
