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
	// LogSince and LogLimitBytes bound the controller logs read.
	LogSince      time.Duration
	LogLimitBytes int64
	// Retry bounds the retries of each read; the zero value is retry's default, within
	// Clients.Timeout.
	Retry retry.Policy
	// Candidates returns the pods to read in full, given the metadata-only snapshot.
	Candidates func(*snapshot.Snapshot) []types.UID
	// Revisions returns the ControllerRevisions to read, asked along with the candidates.
	Revisions func(*snapshot.Snapshot) []snapshot.RevisionRead
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
}

// Collect reads the inputs into a new, indexed snapshot. It fails only when the cluster cannot be
// reached at all; every other failure is recorded in Snapshot.Unread.
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
	var sv *version.Info
	err := col.retry.Do(ctx, func(context.Context) error {
		var err error
		sv, err = c.Discovery.ServerVersion()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read server version: %w", err)
	}
	col.snap.ServerVersion = sv.GitVersion
	col.podPageSize = opts.PageSize
	if !pageSizeSet && streamsLists(sv.Major, sv.Minor) {
		col.podPageSize = 0
	}
	col.discover(ctx)

	want := map[snapshot.Input]bool{}
	for _, in := range inputs {
		want[in] = true
	}
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
	}
	col.covered = coveredResources(want)
	col.parallel(ctx, want, readers)
	if want[snapshot.InputObjects] {
		col.addCoveredObjects()
	}
	col.snap.Now, col.snap.ClockOffset = col.date.Now(col.opts.Clock())
	col.snap.Index()

	if want[snapshot.InputPods] && opts.Candidates != nil {
		// A check may ask for more pods once it has seen the first ones (a sample of a group,
		// then the whole group), so candidates are asked for again until none are new.
		settled := false
		for range maxCandidateRounds {
			read, err := col.readCandidates(ctx, opts.Candidates(col.snap))
			if err != nil {
				col.unread(snapshot.InputPods, err)
				break
			}
			if read > 0 {
				col.snap.Index()
			}
			// Revisions are asked for on what the pods read so far show.
			if col.readRevisions(ctx) == 0 && read == 0 {
				settled = true
				break
			}
		}
		if !settled {
			// The last round's pods may name revisions still.
			col.readRevisions(ctx)
		}
	}
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
	// Last, so that the two reads of the leader Lease are as far apart as the scan allows.
	if want[snapshot.InputControllers] {
		if err := col.rereadLeaderLease(ctx); err != nil {
			col.unread(snapshot.InputControllers, err)
		}
	}
	col.snap.Index()
	return col.snap, nil
}

func (col *collector) parallel(ctx context.Context, want map[snapshot.Input]bool, readers map[snapshot.Input]func(context.Context) error) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, col.opts.Concurrency)
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
	for _, in := range names {
		if !want[in] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(in snapshot.Input, read func(context.Context) error) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := read(ctx); err != nil {
				col.unread(in, err)
			}
		}(in, readers[in])
	}
	wg.Wait()
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
