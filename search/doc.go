// Package search suggests the configurations of a hyperparameter search and decides, from
// their results at rungs, which go on training: the engine of random and Bayesian (TPE)
// search and of early stopping for sweeps, with no Temporal and no store in it.
//
// # Samplers
//
// A [Sampler] suggests a [Point] of a [Space] given the [Observation]s before it:
//
//   - random search ([MethodRandom]) draws each parameter independently: uniform, uniform
//     in log (log_uniform), whole numbers of [Min, Max], or one of the choices;
//   - TPE ([MethodTPE]), the tree-structured Parzen estimator (Bergstra et al., NeurIPS
//     2011) as in Optuna, draws at random until [DefaultStartupTrials] observations have a
//     value ([StartupTrials] changes it), then fits a Parzen estimator l to the best
//     ⌈n/10⌉ (at most 25) and g to the rest, and suggests the best l/g of 24 draws from l.
//     A configuration stopped at a rung counts through its value there, behind every
//     completed one and deeper ones first, as Optuna ranks pruned trials.
//
// # Early stopping
//
// A [State] holds a search's [Candidate]s; the caller asks it for jobs ([State.Next]),
// runs them, and reports how they end ([State.Apply]). Training stops at rungs, the steps
// of [Config.Rungs], the last being the end of the run; at a rung a candidate pauses and
// its rule ([Config.Rule]) decides:
//
//   - [ASHA], asynchronous successive halving (Li et al., "A System for Massively Parallel
//     Hyperparameter Tuning", MLSys 2020, Algorithm 2): whenever a slot frees, promote the
//     best not-yet-promoted candidate among the top 1/η of the highest rung that has one,
//     else start a new configuration. No slot waits; decisions depend on arrival order.
//   - [SyncHalving], synchronous successive halving (Jamieson & Talwalkar, AISTATS 2016):
//     all Budget configurations train to the first rung; once a whole rung is in, its best
//     1/η, or [Config.Finalists] if more, go on and the rest stop. Decisions are the same
//     in any arrival order.
//   - [Median], the median stopping rule (Golovin et al., "Google Vizier", KDD 2017) as
//     Optuna's MedianPruner: once MinTrials configurations are completed, a candidate
//     whose best value so far is worse than their median at the same rung stops.
//   - [Hyperband] (Li et al., JMLR 2018), asynchronous (Li et al. 2020, §3.2): brackets
//     s = 0..[Config.Brackets]−1 run ASHA side by side, bracket s on the rungs from rung s
//     on, so its configurations are first judged at rung s; the last bracket trains to
//     the end unjudged. Each configuration joins a bracket by its index, in proportion to
//     Hyperband's bracket sizes, so the brackets hedge ASHA's short-horizon bias.
//   - [NoStopping]: every configuration trains to the end in one job.
//
// A grace period ([Config.Grace]) applies to every rule: no rung before it is judged, and
// no configuration pauses there ([Judged]).
//
// A diverged candidate (+Inf at its rung) ranks last and is never promoted; a failed one
// has no value and does not rank. At most Parallel candidates train at once, Budget start
// in all; candidates still paused when nothing more can run are stopped at their rung.
//
// # Determinism
//
// The caller keeps a State as JSON between calls (an infinite value is written "+Inf")
// and replays nothing: every result here is a function of its arguments alone. A
// suggestion depends only on (seed, index, history): the sampler of suggestion index is
// seeded by a splitmix64 mix of the two, and the history goes in in its order. No map is
// iterated where its order could reach a result, nothing reads the clock or the
// process-wide random source, and a State read back from JSON goes on exactly as the one
// written.
//
// # Why goptuna
//
// The samplers run on github.com/c-bata/goptuna, the Go port of Optuna that Kubeflow
// Katib uses: its study, in-memory storage, distributions and seeded random sampler; its
// median pruner checks ours in the tests. Its TPE sampler cannot be used as it is in
// v0.9.0: it draws from the process-wide random source, so no seed reproduces it, and its
// density has errors that leave it little better than random search (tpe.go lists them).
// So TPE's Parzen estimator and acquisition are written here after Optuna's, as a goptuna
// sampler, keeping goptuna's ranking of trials and its defaults; random search gets two
// repairs (random.go). The alternatives were go-bayesopt (a Gaussian process,
// unmaintained) and a search written whole by hand, study and trials included.
package search
