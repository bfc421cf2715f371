package collect

import "time"

// clockTolerance is how far the local clock may be from the apiserver's and still be taken as
// agreeing: the Date header has whole seconds, and a response spends time on the wire.
const clockTolerance = 2 * time.Second

// Now returns the apiserver's current time as the last response's Date shows it, carried
// forward on the local monotonic clock, and its offset from local (the local clock from
// Options.Clock). Ages of what the cluster timestamps (deletionTimestamp, conditions, Lease
// renewals) must be measured on the clock that wrote them: a workstation clock an hour ahead
// would make a pod deleted a minute ago look stuck for an hour, and propose writes for it.
// Without a Date, or within clockTolerance of it, the local clock stands.
func (d *ServerDate) Now(local time.Time) (time.Time, time.Duration) {
	d.mu.Lock()
	date, at := d.t, d.at
	d.mu.Unlock()
	if date.IsZero() {
		return local, 0
	}
	// The Date header truncates to the second: the middle of that second is the best estimate.
	server := date.Add(time.Since(at) + time.Second/2)
	offset := server.Sub(local)
	if offset > -clockTolerance && offset < clockTolerance {
		return local, 0
	}
	return server, offset
}
