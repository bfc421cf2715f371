package snapshot

// UnreadError is why the collector could not read an input, or part of it, classified once as it
// is recorded, so that the checks' coverage, the scan's exit code and the auditor agree.
type UnreadError struct {
	Input Input
	Err   error
	// Limit: Err only states a limit of what could be read (an RBAC denial, an aggregated API that
	// is down, which the checks diagnose), which the report states; otherwise the scan failed to
	// look there.
	Limit bool
}

func (e *UnreadError) Error() string { return e.Err.Error() }

func (e *UnreadError) Unwrap() error { return e.Err }

// Hides says whether a check that could not read the input may have missed findings (Hides).
func (e *UnreadError) Hides() bool { return Hides(e.Input) }

// Blinds says whether the scan did not look there: the input hides findings and stayed unread
// for a failure, not a stated limit.
func (e *UnreadError) Blinds() bool { return !e.Limit && e.Hides() }

// UnreadInput returns why input in was not read, as the collector classified it; ok is false when
// it was read. An error put in Unread unclassified (a snapshot built by hand) is a failure to look.
func (s *Snapshot) UnreadInput(in Input) (u *UnreadError, ok bool) {
	err, ok := s.Unread[in]
	if !ok {
		return nil, false
	}
	if u, classified := err.(*UnreadError); classified {
		return u, true
	}
	return &UnreadError{Input: in, Err: err}, true
}

// Hides says whether checks that could not read the inputs may have missed findings: unless each
// only adds evidence to what the checks detect from the others (events, controller logs, Cluster
// API logs, admission: which webhook holds a write the checks found held), whose loss leaves the
// findings whole with less precise root causes. With no input
// named it cannot tell, and assumes the worst. This is the one rule the scan's coverage (and so
// its exit code) and the auditor's reports and metrics follow.
func Hides[S ~string](inputs ...S) bool {
	for _, in := range inputs {
		switch Input(in) {
		case InputEvents, InputControllerLogs, InputClusterAPILogs, InputAdmission:
		default:
			return true
		}
	}
	return len(inputs) == 0
}
