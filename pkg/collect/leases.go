package collect

import (
	"context"
	"net/http"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A leader's liveness is judged the way client-go's leader election judges it
// (k8s.io/client-go/tools/leaderelection, LeaderElector.isLeaseValid and setObservedRecord): by
// whether the record changes between observations, not by comparing its renewTime with a local
// clock. The Lease is read twice, with the controllers and at the end of the scan, and each read
// records the apiserver's own time (its Date header), so a slow scan or a workstation clock ahead
// of the cluster cannot make a live leader look dead.

// readLeaderLease reads the kruise-manager's leader Lease and records the read. The first read
// also puts the Lease in the snapshot. A missing Lease is no error: no leader has taken it.
func (col *collector) readLeaderLease(ctx context.Context, mgr *kruise.Manager, first bool) error {
	ns, name := mgr.LeaseNamespace, mgr.LeaseName
	var date ServerDate
	lease, err := get(ctx, col, func(ctx context.Context) (*coordinationv1.Lease, error) {
		return col.c.Kube.CoordinationV1().Leases(ns).Get(WithServerDate(ctx, &date), name, metav1.GetOptions{})
	})
	elapsed := date.Elapsed(col.started)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return readErr("get", "Lease "+ns+"/"+name, err)
	}
	read := snapshot.LeaseRead{Lease: lease, ServerTime: date.Time(), Elapsed: elapsed}
	col.add(func(s *snapshot.Snapshot) {
		if first {
			s.Leases = append(s.Leases, lease)
		}
		if s.LeaseReads == nil {
			s.LeaseReads = map[string][]snapshot.LeaseRead{}
		}
		key := ns + "/" + name
		s.LeaseReads[key] = append(s.LeaseReads[key], read)
	})
	return nil
}

// rereadLeaderLease reads the leader Lease again at the end of the scan, when the first read
// found one: a renewal between the two reads proves a live leader whatever the clocks say.
func (col *collector) rereadLeaderLease(ctx context.Context) error {
	mgr := kruise.FindManager(col.snap.Deployments, col.opts.Settings.KruiseNamespace, col.opts.Settings.KruiseDeployment)
	if mgr == nil {
		return nil
	}
	if _, ok := col.snap.Lease(mgr.LeaseNamespace, mgr.LeaseName); !ok {
		return nil
	}
	return col.readLeaderLease(ctx, mgr, false)
}

// ServerDate receives the Date header of the response to a request made with WithServerDate.
type ServerDate struct {
	mu sync.Mutex
	t  time.Time
	// at is when the response arrived, on the local monotonic clock.
	at time.Time
	// recorded is how far into a recorded scan the response came, when a transport that
	// records or replays one said so (SetRecordedElapsed).
	recorded *time.Duration
}

// Elapsed is how long after start the response came: the recorded time when a recording or
// replaying transport gave one, else the local monotonic clock now. A replayed scan must compare
// two reads of a Lease as far apart as the capture saw them, not as fast as a replay serves them;
// and the capture's own scan uses the same recorded numbers, so its report and the replay's agree
// to the millisecond.
func (d *ServerDate) Elapsed(start time.Time) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.recorded != nil {
		return *d.recorded
	}
	return time.Since(start)
}

// SetRecordedElapsed tells the request's ServerDate (WithServerDate), if any, how far into a
// recorded scan its answer came: the hook for the transports that record and replay scans.
func SetRecordedElapsed(ctx context.Context, elapsed time.Duration) {
	if d, ok := ctx.Value(serverDateKey{}).(*ServerDate); ok {
		d.mu.Lock()
		d.recorded = &elapsed
		d.mu.Unlock()
	}
}

// Time is the apiserver's time of the last response, zero when none carried a Date header (a
// fake clientset, or a client built without RecordServerDate).
func (d *ServerDate) Time() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.t
}

type serverDateKey struct{}

// WithServerDate returns a context whose requests record the response's Date header in d.
func WithServerDate(ctx context.Context, d *ServerDate) context.Context {
	return context.WithValue(ctx, serverDateKey{}, d)
}

// RecordServerDate wraps a client's transport so that a request made with WithServerDate
// records the Date header of its response. client-go's typed clients return only the decoded
// object, so the header is taken on its way through the transport.
func RecordServerDate(rt http.RoundTripper) http.RoundTripper {
	return serverDateTransport{next: rt}
}

type serverDateTransport struct{ next http.RoundTripper }

func (t serverDateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if d, ok := req.Context().Value(serverDateKey{}).(*ServerDate); ok {
		if at, perr := http.ParseTime(resp.Header.Get("Date")); perr == nil {
			d.mu.Lock()
			d.t, d.at = at, time.Now()
			d.mu.Unlock()
		}
	}
	return resp, nil
}
