// Package collect reads the cluster once per scan into a snapshot: each input the enabled checks
// need is listed once, paginated, several at a time; bulk kinds are read metadata-only and only
// candidate pods are read in full. A read that fails is recorded in the snapshot, never fatal.
package collect

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Clients are the API clients the collector reads with.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
	// Timeout is the client's --request-timeout, if set: one read, with its retries, ends within it.
	Timeout time.Duration
}

// Options tune a collection.
type Options struct {
	Scope    snapshot.Scope
	Settings snapshot.Settings
	// PageSize is the limit of each LIST page (default 500). Unless it is set, the bulk pod list
	// is one response when the apiserver streams list encodings (v1.33 and later), since continue
	// pages cost it several times as much as one streamed list served from its cache.
	PageSize int64
	// Concurrency bounds the reads in flight.
	Concurrency int
	// Clock is the local clock the snapshot's Now is taken from (default time.Now). Nothing the
	// cluster timestamps is judged live or dead against it alone (see leases.go).
	Clock func() time.Time
	// At, when set, is the instant the snapshot's clock stands at, whatever the answers' Dates
	// say: a replayed capture is judged at its capture's moment, not at the Date of whichever
	// recorded answer a replay happens to serve last.
	At time.Time
	// LogSince and LogLimitBytes bound the controller logs read.
	LogSince      time.Duration
	LogLimitBytes int64
	// Retry bounds the retries of each read; the zero value is retry's default, within
	// Clients.Timeout.
	Retry retry.Policy
	// Reads returns the targeted reads the checks declare: the pods to read in full and the
	// ControllerRevisions to read. It is asked once, on the indexed metadata-only snapshot.
	Reads func(*snapshot.Snapshot) snapshot.Reads
	// AsksWorkloads runs the checks on the snapshot as read and returns what they searched every
	// namespace's controller workloads for (Snapshot.AskedWorkloads). A one-namespace scope lists
	// them near its namespace only and reads the matches of those searches in every namespace;
	// without it, it lists them all.
	AsksWorkloads func(*snapshot.Snapshot) []snapshot.WorkloadQuery
	// NodesByName reads only the nodes (and their heartbeat Leases) the checks declare, by name,
	// instead of listing every node: what one object's diagnosis needs. A scan of a namespace or
	// the cluster lists them, which costs less than a GET per node once many are named.
	NodesByName bool
	// PodAnnotations are the annotations metadata-only pods keep. The others (CNI state,
	// last-applied configurations, hashes) can outweigh the rest of a pod's metadata and are
	// dropped while the pod list is decoded.
	PodAnnotations []string
}

func (o *Options) defaults() {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.LogSince <= 0 {
		o.LogSince = 30 * time.Minute
	}
	if o.LogLimitBytes <= 0 {
		o.LogLimitBytes = 8 << 20
	}
	if o.Settings == (snapshot.Settings{}) {
		o.Settings = snapshot.DefaultSettings()
	}
}

type collector struct {
	c    Clients
	opts Options
	snap *snapshot.Snapshot
	mu   sync.Mutex
	// started is when the collection began, on the local monotonic clock.
	started time.Time
	// date is the apiserver's Date on the latest answer, the clock the snapshot's Now follows.
	date ServerDate
	// retry is how every read rides out transient faults (retry.go).
	retry retry.Policy
	// resources found by discovery, for the objects input.
	resources []discovered
	discErr   error
	// failedGroups are the groups whose discovery failed; nil when discovery failed whole.
	failedGroups map[string]bool
	// covered are resources another input reads whole; the objects input does not list them again.
	covered map[schema.GroupResource]bool
	// podsRV is the resourceVersion the pod list was read at; candidates are read at it or newer.
	podsRV string
	// podPageSize is the page size of the bulk pod list; 0 reads it in one streamed response.
	podPageSize int64
	// asked are the candidate pods already read (or found gone), so no later round reads them again.
	asked map[types.UID]bool
	// revisionsAsked are the ControllerRevisions already read, by "namespace/name": true once read in full.
	revisionsAsked map[string]bool
	// nearControllers says the controllers' workloads were read only in the namespaces a
	// one-namespace scope needs them from (readNearControllerWorkloads).
	nearControllers bool
	// want are the inputs being read.
	want map[snapshot.Input]bool
}

// Collect reads the inputs into a new, indexed snapshot. It fails only when the cluster cannot be
// reached at all; every other failure is recorded in Snapshot.Unread.
//
// It runs in stages, each on what the one before read: the bulk lists, the index, the CRDs that
// namespaces being deleted fail to convert and the Services the apiserver calls (webhooks,
// conversion webhooks, APIServices), the targeted reads the checks declared on that index, and
// the evidence that only adds detail.
func Collect(ctx context.Context, c Clients, opts Options, inputs []snapshot.Input) (*snapshot.Snapshot, error) {
	pageSizeSet := opts.PageSize > 0
	opts.defaults()
	if opts.Retry.Budget == 0 {
		opts.Retry.Budget = c.Timeout
	}
	col := &collector{c: c, opts: opts, retry: opts.Retry, started: time.Now(), snap: &snapshot.Snapshot{
		Scope: opts.Scope, Settings: opts.Settings,
		Unread: map[snapshot.Input]error{}, Limits: map[snapshot.Input]string{}, Installed: map[string]bool{}, Logs: map[string]string{},
	}}
	ctx = WithServerDate(ctx, &col.date)
	if err := col.connect(ctx, pageSizeSet); err != nil {
		return nil, err
	}
	want := map[snapshot.Input]bool{}
	for _, in := range inputs {
		want[in] = true
	}
	col.want = want
	if opts.NodesByName {
		col.snap.NodesByName = map[string]bool{}
	}
	col.bulkLists(ctx, want)
	col.index()
	if want[snapshot.InputAdmission] {
		col.readBackends(ctx)
	}
	var reads *snapshot.Reads
	if want[snapshot.InputPods] && opts.Reads != nil {
		r := opts.Reads(col.snap)
		reads = &r
	}
	// Without the checks' declarations, whether they search every workload is unknown.
	if col.nearControllers && (reads == nil || opts.AsksWorkloads == nil) {
		col.widenControllers(ctx)
		col.snap.Index()
	}
	if reads != nil {
		col.targetedReads(ctx, *reads)
	}
	col.evidence(ctx, want)
	col.snap.Index()
	// Whether a check searches every namespace's workloads depends on what it finds (a pod on a
	// NotReady node needs none; a finalizer's unknown owner does), so the checks are asked on
	// the snapshot as read, with the evidence, and only what they search for is read.
	// This adds workloads of other namespaces only, which no read above depends on: the near
	// read already holds every controller's Deployment, at its configured place or found by image.
	if col.nearControllers {
		col.readAskedWorkloads(ctx)
	}
	return col.snap, nil
}

// connect reads the server's version, which says how to list pods, and discovers its resources.
func (col *collector) connect(ctx context.Context, pageSizeSet bool) error {
	var sv *version.Info
	err := col.retry.Do(ctx, func(context.Context) error {
		var err error
		sv, err = col.c.Discovery.ServerVersion()
		return err
	})
	if err != nil {
		return fmt.Errorf("read server version: %w", err)
	}
	col.snap.ServerVersion = sv.GitVersion
	col.podPageSize = col.opts.PageSize
	if !pageSizeSet && streamsLists(sv.Major, sv.Minor) {
		col.podPageSize = 0
	}
	col.discover(ctx)
	return nil
}

// bulkLists reads every wanted input whole (pods metadata-only), several at a time.
func (col *collector) bulkLists(ctx context.Context, want map[snapshot.Input]bool) {
	readers := map[snapshot.Input]func(context.Context) error{
		snapshot.InputPods:               col.readPods,
		snapshot.InputNodes:              col.readNodes,
		snapshot.InputNodeLeases:         col.readNodeLeases,
		snapshot.InputEvents:             col.readEvents,
		snapshot.InputNamespaces:         col.readNamespaces,
		snapshot.InputAPIServices:        col.readAPIServices,
		snapshot.InputObjects:            col.readObjects,
		snapshot.InputKruiseWorkloads:    col.readWorkloads,
		snapshot.InputSidecarSets:        col.readSidecarSets,
		snapshot.InputControllers:        col.readControllers,
		snapshot.InputClusterAPI:         col.readClusters,
		snapshot.InputPersistentVolumes:  col.readVolumes,
		snapshot.InputDeletedServices:    col.readDeletedServices,
		snapshot.InputDeletedAttachments: col.readDeletedAttachments,
		snapshot.InputAdmission:          col.readAdmission,
		snapshot.InputLeaderLeases:       col.readLeaderLeases,
	}
	col.covered = coveredResources(want)
	if col.opts.NodesByName {
		delete(readers, snapshot.InputNodes) // read by name, on what the checks declare (targetedReads)
		delete(readers, snapshot.InputNodeLeases)
	}
	col.parallel(ctx, want, readers)
	if want[snapshot.InputObjects] {
		col.addCoveredObjects()
	}
}

// index dates the snapshot on the apiserver's clock and indexes what the bulk lists read, for
// the checks to declare their targeted reads on.
func (col *collector) index() {
	col.snap.Now, col.snap.ClockOffset = col.now()
	col.snap.Index()
}

// targetedReads carries out the reads the checks declared, in rounds: the pods due, then the
// revisions due on what the snapshot holds then. A round can make more reads due (a sample
// that differs, a pod that names a revision), so rounds go on until one finds nothing new,
// within maxReadRounds rounds of pod reads. With NodesByName, the nodes of the pods read come
// last.
func (col *collector) targetedReads(ctx context.Context, reads snapshot.Reads) {
	if col.opts.NodesByName && col.want[snapshot.InputNodes] {
		defer func() {
			col.readNamedNodes(ctx, reads.NodesDue(col.snap))
			col.snap.Index()
		}()
	}
	if col.readReplicaSets(ctx, reads.ReplicaSets) > 0 {
		col.snap.Index()
	}
	for range maxReadRounds {
		read, err := col.readCandidates(ctx, reads.PodsDue(col.snap))
		if err != nil {
			col.unread(snapshot.InputPods, err)
			break
		}
		if read > 0 {
			col.snap.Index()
		}
		if col.readRevisions(ctx, reads.RevisionsDue(col.snap)) == 0 && read == 0 {
			return
		}
	}
	// The last round's pods may name revisions still.
	col.readRevisions(ctx, reads.RevisionsDue(col.snap))
}

// evidence reads what only adds detail to what the checks find: the controllers' logs, and last
// the leader Lease again, so that its two reads are as far apart as the scan allows.
func (col *collector) evidence(ctx context.Context, want map[snapshot.Input]bool) {
	if want[snapshot.InputControllerLogs] {
		if err := col.readLogs(ctx); err != nil {
			col.unread(snapshot.InputControllerLogs, err)
		}
	}
	if want[snapshot.InputClusterAPILogs] {
		if err := col.readClusterAPILog(ctx); err != nil {
			col.unread(snapshot.InputClusterAPILogs, err)
		}
	}
	if want[snapshot.InputControllers] {
		if err := col.rereadLeaderLease(ctx); err != nil {
			col.unread(snapshot.InputControllers, err)
		}
	}
}

func (col *collector) parallel(ctx context.Context, want map[snapshot.Input]bool, readers map[snapshot.Input]func(context.Context) error) {
	names := make([]snapshot.Input, 0, len(readers))
	for in := range readers {
		names = append(names, in)
	}
	// The pod list is the longest read on a big cluster: it starts first, and the others start in
	// a fixed order as slots free up.
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == snapshot.InputPods) != (names[j] == snapshot.InputPods) {
			return names[i] == snapshot.InputPods
		}
		return names[i] < names[j]
	})
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for _, in := range names {
		if !want[in] {
			continue
		}
		read := readers[in]
		// Go waits for a free slot, so the reads start in the order above.
		g.Go(func() error {
			if err := read(ctx); err != nil {
				col.unread(in, err)
			}
			return nil // recorded: a failed input never stops the others
		})
	}
	_ = g.Wait()
}

func (col *collector) unread(in snapshot.Input, err error) {
	col.mu.Lock()
	defer col.mu.Unlock()
	if prev, ok := col.snap.UnreadInput(in); ok {
		err = fault.Join(prev.Err, err) // joined, so fault.Limit still sees each error
	}
	// Classified here, once: the checks' coverage reads the record, not the error.
	col.snap.Unread[in] = &snapshot.UnreadError{Input: in, Err: err, Limit: fault.Limit(err)}
}

func (col *collector) add(f func(s *snapshot.Snapshot)) {
	col.mu.Lock()
	defer col.mu.Unlock()
	f(col.snap)
}

// namespace returns the namespace the scope reads; "" is all namespaces.
func (col *collector) namespace() string {
	if col.opts.Scope.AllNamespaces {
		return ""
	}
	return col.opts.Scope.Namespace
}

// now is the scan's clock and its offset from the local one (ServerDate.Now), or Options.At.
func (col *collector) now() (time.Time, time.Duration) {
	if !col.opts.At.IsZero() {
		return col.opts.At, 0
	}
	return col.date.Now(col.opts.Clock())
}
