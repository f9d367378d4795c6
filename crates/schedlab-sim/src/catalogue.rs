//! What `schedlab list` says about the simulator's traffic models and packet-size
//! distributions: every key with its unit and meaning. A test parses each entry's example, so
//! the catalogue cannot name a key the scenario parser refuses.

use schedlab_core::ParamInfo;

/// One traffic model or size distribution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    /// The `model` (arrivals) or `dist` (size) value.
    pub id: &'static str,
    /// What it generates.
    pub summary: &'static str,
    /// Its keys.
    pub params: &'static [ParamInfo],
    /// A complete inline table using it, as in a scenario.
    pub example: &'static str,
}

const fn p(
    name: &'static str,
    unit: &'static str,
    default: &'static str,
    description: &'static str,
) -> ParamInfo {
    ParamInfo {
        name,
        unit,
        default,
        description,
    }
}

const RATE_PPS: ParamInfo = p(
    "rate_pps",
    "packets/s",
    "required (or rate)",
    "packet rate while sending",
);
const RATE: ParamInfo = p(
    "rate",
    "bit/s",
    "required (or rate_pps)",
    "bit rate while sending (spacing by packet size)",
);

/// Arrival processes (`arrivals = { model = … }`).
pub const TRAFFIC_MODELS: &[ModelInfo] = &[
    ModelInfo {
        id: "cbr",
        summary: "constant bit rate: packets evenly spaced",
        params: &[RATE_PPS, RATE],
        example: "{ model = \"cbr\", rate_pps = 100 }",
    },
    ModelInfo {
        id: "poisson",
        summary: "Poisson arrivals (exponential gaps)",
        params: &[p("rate_pps", "packets/s", "required", "mean packet rate")],
        example: "{ model = \"poisson\", rate_pps = 15 }",
    },
    ModelInfo {
        id: "on_off",
        summary: "on/off: sends at the peak rate while on, silent while off; exponential periods (mean_on, mean_off) or fixed ones (on_packets, off: paper 003's burst source, starting on at the source's start)",
        params: &[
            p("mean_on", "duration", "required (exponential form)", "mean on period"),
            p("mean_off", "duration", "required (exponential form)", "mean off period"),
            p("on_packets", "packets", "required (fixed form)", "packets in every on period"),
            p("off", "duration", "required (fixed form)", "length of every off period"),
            RATE_PPS,
            RATE,
        ],
        example: "{ model = \"on_off\", mean_on = \"500ms\", mean_off = \"500ms\", rate = \"250kbit\" }",
    },
    ModelInfo {
        id: "pareto_on_off",
        summary: "Pareto on/off (heavy-tailed periods), as the VD paper's background traffic",
        params: &[
            p("shape", "α > 1", "required", "Pareto shape of both periods"),
            p("mean_on", "duration", "required", "mean on period"),
            p("mean_off", "duration", "required", "mean off period"),
            RATE_PPS,
            RATE,
        ],
        example: "{ model = \"pareto_on_off\", shape = 1.5, mean_on = \"500ms\", mean_off = \"500ms\", rate = \"250kbit\" }",
    },
    ModelInfo {
        id: "mmpp",
        summary: "Markov-modulated Poisson process with n states",
        params: &[
            p("rates_pps", "packets/s per state", "required", "Poisson rate in each state"),
            p("transition_rates", "1/s, n×n", "required", "rate of moving from state i to j (diagonal ignored)"),
            p(
                "initial_state",
                "index",
                "drawn",
                "state at time 0 (default: drawn from the stationary distribution)",
            ),
        ],
        example: "{ model = \"mmpp\", rates_pps = [10, 100], transition_rates = [[0, 1], [2, 0]] }",
    },
    ModelInfo {
        id: "mpeg",
        summary: "MPEG GOP frames (thesis §4.4.3): IPBBPBBPBB at 3 GOP/s, I ~ U[15000,17000] B, P and B truncated exponential",
        params: &[
            p("gop", "frame types", "\"IPBBPBBPBB\"", "frame sequence of one group of pictures"),
            p("gop_per_s", "GOP/s", "3", "groups of pictures per second"),
            p("i_size", "size table", "U[15000,17000]", "I-frame size distribution"),
            p("p_size", "size table", "exp. mean 2100 in [512,17000]", "P-frame size distribution"),
            p("b_size", "size table", "exp. mean 550 in [256,17000]", "B-frame size distribution"),
        ],
        example: "{ model = \"mpeg\" }",
    },
    ModelInfo {
        id: "trace",
        summary: "replay of a trace CSV (time_s,flow,size_bytes[,class,deadline_s]); sizes come from the trace",
        params: &[
            p("file", "path", "required", "CSV file, relative to the scenario"),
            p("flow", "label", "all rows", "the trace's flow label to replay"),
        ],
        example: "",
    },
];

/// Packet-size distributions (`size = { dist = … }`).
pub const SIZE_DISTRIBUTIONS: &[ModelInfo] = &[
    ModelInfo {
        id: "constant",
        summary: "every packet the same size",
        params: &[
            p("size", "bytes", "required", "packet size"),
            p("header", "bytes", "0", "added to every draw"),
        ],
        example: "{ dist = \"constant\", size = 1000 }",
    },
    ModelInfo {
        id: "uniform",
        summary: "uniform integer sizes in [min, max]",
        params: &[
            p("min", "bytes", "required", "smallest size"),
            p("max", "bytes", "required", "largest size"),
            p("header", "bytes", "0", "added to every draw"),
        ],
        example: "{ dist = \"uniform\", min = 200, max = 1000 }",
    },
    ModelInfo {
        id: "exponential",
        summary: "exponential sizes truncated to [min, max]",
        params: &[
            p("mean", "bytes", "required", "mean size"),
            p("min", "bytes", "1", "smallest size"),
            p("max", "bytes", "65535", "largest size"),
            p("header", "bytes", "0", "added to every draw"),
        ],
        example: "{ dist = \"exponential\", mean = 1000 }",
    },
    ModelInfo {
        id: "empirical",
        summary: "sizes drawn from given values with weights (inline or from a file)",
        params: &[
            p("values", "bytes", "required (or file)", "the sizes"),
            p("weights", "relative", "equal", "their weights"),
            p(
                "file",
                "path",
                "none",
                "CSV of size[,weight] rows instead of values",
            ),
            p("header", "bytes", "0", "added to every draw"),
        ],
        example: "{ dist = \"empirical\", values = [64, 576, 1500], weights = [7, 4, 1] }",
    },
    ModelInfo {
        id: "thesis_best_effort",
        summary: "the thesis's 40-byte header + U[40,700] bytes of data (mean 410 B)",
        params: &[],
        example: "{ dist = \"thesis_best_effort\" }",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(arrivals: &str, size: &str) -> String {
        let size = if size.is_empty() {
            String::new()
        } else {
            format!("size = {size}\n")
        };
        format!(
            "[run]\nduration = \"1s\"\n[[link]]\nname = \"l\"\nrate = \"1Mbit\"\nscheduler = {{ kind = \"fifo\" }}\n\
             [[source]]\nflow = 0\npath = [\"l\"]\narrivals = {arrivals}\n{size}"
        )
    }

    #[test]
    fn every_example_parses() {
        let base = std::path::Path::new(".");
        for model in TRAFFIC_MODELS.iter().filter(|m| !m.example.is_empty()) {
            // Models that set their own sizes (mpeg) take no size table.
            let size = if model.id == "mpeg" {
                ""
            } else {
                "{ dist = \"constant\", size = 100 }"
            };
            let text = scenario(model.example, size);
            crate::validate_scenario_text(&text, base).unwrap_or_else(|e| panic!("{}: {e}", model.id));
            assert!(model.example.contains(&format!("\"{}\"", model.id)));
        }
        for dist in SIZE_DISTRIBUTIONS {
            let text = scenario("{ model = \"poisson\", rate_pps = 1 }", dist.example);
            crate::validate_scenario_text(&text, base).unwrap_or_else(|e| panic!("{}: {e}", dist.id));
        }
    }

    #[test]
    fn the_parser_knows_every_catalogued_id_and_no_other() {
        let base = std::path::Path::new(".");
        let text = scenario("{ model = \"nope\" }", "{ dist = \"constant\", size = 100 }");
        let error = crate::validate_scenario_text(&text, base)
            .unwrap_err()
            .to_string();
        let known: Vec<&str> = TRAFFIC_MODELS.iter().map(|m| m.id).collect();
        assert!(error.contains(&known.join(", ")), "{error}");
        let text = scenario("{ model = \"poisson\", rate_pps = 1 }", "{ dist = \"nope\" }");
        let error = crate::validate_scenario_text(&text, base)
            .unwrap_err()
            .to_string();
        let known: Vec<&str> = SIZE_DISTRIBUTIONS.iter().map(|m| m.id).collect();
        assert!(error.contains(&known.join(", ")), "{error}");
    }
}
