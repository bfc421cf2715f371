package fix

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// WaveStarted is what OnWaveStarted hears: a wave of one workload about to be applied.
type WaveStarted struct {
	Workload report.ObjectRef
	// Wave counts the workload's waves from 1; Pods is how many pods this wave takes.
	Wave, Pods int
	// Ready is the workload's serving pods before the wave; MinReady what it keeps.
	Ready, MinReady int32
}

// WaveWaiting is what OnWaveWaiting hears: a workload's next wave waits for Ready pods.
type WaveWaiting struct {
	Workload report.ObjectRef
	// Ready is the workload's serving pods now (the pods this run took away not counted);
	// MinReady what it keeps; Pending the steps left.
	Ready, MinReady int32
	Pending         int
	// Left is how long the run still waits before the rest is deferred.
	Left time.Duration
}

// wave tracks one group while the engine runs it.
type wave struct {
	// g is the run's own copy of the plan's group, which each read of the wave refreshes.
	g       *Group
	pending []*Step
	taken   map[types.UID]bool
	waves   int
	// lastReady is the Ready count last reported waiting, so a wait is reported when it changes.
	lastReady int32
}

// waveState is a group's workload read fresh.
type waveState struct {
	// ready counts the pods the workload's controller counts available (Budget.available).
	ready int32
	pods  map[string]*corev1.Pod
	// now is the apiserver's time of the pods' read.
	now time.Time
	// pdbCap is the least DisruptionsAllowed of the PodDisruptionBudgets over the pods, or -1.
	pdbCap int32
}

// runWaves applies the groups' steps in waves: for each workload, as many serving pods as its
// budget allows, then, once its replacements are Ready, the next wave; workloads advance side by
// side. What the budget does not allow before the deadline, or after an interrupt, is deferred.
func (e *Engine) runWaves(ctx context.Context, groups []*Group, apply func(s *Step) Result, put func(s *Step, r Result)) {
	deadline := time.Now().Add(e.o.WaitTimeout)
	var ws []*wave
	for _, g := range groups {
		if g.Refusal != "" || g.Failure != "" {
			for _, s := range g.Steps {
				r := newResult(s)
				r.Status, r.Reason = StatusRefused, g.Refusal
				if g.Failure != "" {
					r.Status, r.Reason = StatusFailed, "cannot read the budget of the pod's workload: "+g.Failure
				}
				put(s, r)
			}
			continue
		}
		own := *g
		ws = append(ws, &wave{g: &own, pending: g.Steps, taken: map[types.UID]bool{}, lastReady: -1})
	}
	oneWave := e.o.OneWave || e.o.DryRun == DryRunServer
	for {
		if ctx.Err() != nil {
			for _, w := range ws {
				e.notAttempted(w, put, "not attempted: fix was interrupted ("+ctx.Err().Error()+") before this pod's wave")
			}
			return
		}
		progressed, left := false, 0
		for _, w := range ws {
			if len(w.pending) == 0 || ctx.Err() != nil {
				left += len(w.pending)
				continue
			}
			if oneWave && w.waves > 0 {
				e.deferRest(w, put, e.laterWaveReason())
				continue
			}
			st, err := e.readWave(ctx, w)
			if err != nil {
				e.finishRest(w, put, StatusFailed, "cannot read the budget of the pod's workload: "+err.Error())
				continue
			}
			if w.g.Refusal != "" {
				e.finishRest(w, put, StatusRefused, w.g.Refusal)
				continue
			}
			picked := w.pick(st)
			if len(picked) == 0 {
				if oneWave {
					e.deferRest(w, put, fmt.Sprintf("%s has %d Ready pods and must keep %d: its budget allows no pod away now", w.g.Budget.Workload, st.ready, w.g.MinReady()))
					continue
				}
				left += len(w.pending)
				e.waiting(w, st, deadline)
				continue
			}
			w.waves++
			if e.o.OnWaveStarted != nil {
				e.o.OnWaveStarted(WaveStarted{Workload: w.g.Budget.Workload, Wave: w.waves, Pods: len(picked), Ready: st.ready, MinReady: w.g.MinReady()})
			}
			for _, s := range picked {
				// A pod this run did not take away after all does not count against the budget.
				if r := apply(s); r.Status != StatusApplied && r.Status != StatusDryRun {
					delete(w.taken, types.UID(s.Target.UID))
				}
			}
			progressed = true
			left += len(w.pending)
		}
		switch {
		case left == 0:
			return
		case progressed || ctx.Err() != nil:
			continue
		case !time.Now().Before(deadline):
			for _, w := range ws {
				e.deferRest(w, put, fmt.Sprintf("the budget of %s did not allow it within --timeout %s: the workload had %d Ready pods and must keep %d, so none could go; never forced, run fix again",
					w.g.Budget.Workload, e.o.WaitTimeout, max(w.lastReady, 0), w.g.MinReady()))
			}
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(e.o.PollInterval):
		}
	}
}

// pick chooses the pending steps of this wave: every pod that is not serving (taking it away
// costs nothing); pods Ready but not yet available, which the workload's controller already
// counts unavailable but a PodDisruptionBudget counts healthy (the disruption controller's
// countHealthyPods reads Ready alone), while the PodDisruptionBudgets allow; and available pods
// while both the workload's budget and the PodDisruptionBudgets allow.
func (w *wave) pick(st waveState) []*Step {
	allowance := st.ready - w.g.MinReady()
	pdb := int32(-1) // no PodDisruptionBudget
	if st.pdbCap >= 0 {
		// The Eviction API judges too; at least one is sent so its answer is reported.
		pdb = max(st.pdbCap, 1)
	}
	var picked, rest []*Step
	for _, s := range w.pending {
		p, ok := st.pods[s.Target.UID]
		switch {
		case !ok || !serving(p):
			picked = append(picked, s)
		case !w.g.Budget.available(p, st.now) && pdb != 0:
			pdb--
			picked = append(picked, s)
		case w.g.Budget.available(p, st.now) && allowance > 0 && pdb != 0:
			allowance--
			pdb--
			picked = append(picked, s)
			w.taken[p.UID] = true
		default:
			rest = append(rest, s)
		}
	}
	w.pending = rest
	return picked
}

// readWave re-reads the group's workload, its budget and its pods, and counts the serving pods
// the run has not taken away.
func (e *Engine) readWave(ctx context.Context, w *wave) (waveState, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.ActionTimeout)
	defer cancel()
	ref := w.g.Budget.Workload
	r := budgetReader{c: e.c}
	ctrl := true
	u, err := r.get(ctx, ref.Namespace, &metav1.OwnerReference{APIVersion: ref.APIVersion, Kind: ref.Kind, Name: ref.Name, UID: types.UID(ref.UID), Controller: &ctrl})
	if err != nil {
		return waveState{}, err
	}
	action := ""
	if len(w.g.Steps) > 0 {
		action = w.g.Steps[0].Action
	}
	pods, now, err := r.read(ctx, w.g, u, action)
	if err != nil {
		return waveState{}, err
	}
	st := waveState{pods: map[string]*corev1.Pod{}, pdbCap: -1, now: now}
	for i := range pods {
		p := &pods[i]
		st.pods[string(p.UID)] = p
		if w.g.Budget.available(p, now) && !w.taken[p.UID] {
			st.ready++
		}
	}
	for _, p := range w.g.PDBs {
		if st.pdbCap < 0 || p.DisruptionsAllowed < st.pdbCap {
			st.pdbCap = p.DisruptionsAllowed
		}
	}
	return st, nil
}

// waiting reports a wait when it starts and whenever the Ready count moves.
func (e *Engine) waiting(w *wave, st waveState, deadline time.Time) {
	if st.ready == w.lastReady {
		return
	}
	w.lastReady = st.ready
	if e.o.OnWaveWaiting != nil {
		e.o.OnWaveWaiting(WaveWaiting{Workload: w.g.Budget.Workload, Ready: st.ready, MinReady: w.g.MinReady(),
			Pending: len(w.pending), Left: time.Until(deadline).Round(time.Second)})
	}
}

func (e *Engine) laterWaveReason() string {
	if e.o.DryRun == DryRunServer {
		return "server dry run checks only the first wave; this pod would be evicted in a later one, once the first wave's replacements are Ready"
	}
	return "--wait=false runs only the first wave; run fix again once the replacements are Ready"
}

// deferRest reports the group's pending steps deferred (dry run under server dry run).
func (e *Engine) deferRest(w *wave, put func(*Step, Result), reason string) {
	status := StatusDeferred
	if e.o.DryRun == DryRunServer {
		status = StatusDryRun
	}
	e.finishRest(w, put, status, reason)
}

// notAttempted reports the group's pending steps deferred, marked never tried.
func (e *Engine) notAttempted(w *wave, put func(*Step, Result), reason string) {
	e.deferRest(w, func(s *Step, r Result) {
		r.NotAttempted = true
		put(s, r)
	}, reason)
}

func (e *Engine) finishRest(w *wave, put func(*Step, Result), status Status, reason string) {
	for _, s := range w.pending {
		r := newResult(s)
		r.Status, r.Reason = status, reason
		put(s, r)
	}
	w.pending = nil
}
