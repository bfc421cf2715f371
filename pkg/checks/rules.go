package checks

// Rule is one root cause's test in a check's diagnosis: over the check's per-run context P (every
// check names its own type pass) and the subject S it judges (a pod, a workload, an object), it
// says whether the root cause holds and, when it does, the draft of its finding.
type Rule[P, S any] func(p P, subject S) (Draft, bool)

// Diagnose runs the rules in order and returns the draft of the first that holds: a check lists
// its root causes most specific first, and a new root cause is a new rule in that list.
func Diagnose[P, S any](rules []Rule[P, S], p P, subject S) (Draft, bool) {
	for _, r := range rules {
		if d, ok := r(p, subject); ok {
			return d, true
		}
	}
	return Draft{}, false
}
