// Package kruisemanager stands in for the leader of kruise-manager v1.7.0: no container runs in the
// scenario cluster (kwok only simulates pods), so this process does, through the API, what the
// leader's CloneSet controller does there, with the behaviour the checks diagnose:
//
//   - leader election: the Lease kruise-system/kruise-manager is held by "<pod>_<uuid>" of a
//     Running manager pod and renewed every 2s; when the leader's pod is deleted the Lease is not
//     released (observed with the real v1.7.0), and another Running replica takes it over once it
//     expires (15s). A new leader starts with empty memory: no expectations.
//   - the CloneSet controller: pods created from the template with kruise's labels, annotations,
//     readiness gates and owner reference, SuccessfulCreate events; lifecycle refresh from
//     PreparingNormal to Normal once the preNormal hook is satisfied (IsPodAllHooked); status as
//     calculateStatus writes it; scale expectations that skip every reconcile while unsatisfied,
//     logging "Not satisfied scale" and, past --expectation-timeout, "Expectation unsatisfied
//     overtime" to the leader container's log, which kwok serves through pods/log; scaling that
//     counts pods as v1.9.0's calculateDiffsWithExpectation does (PreparingDelete pods counted,
//     pods chosen by name deleted or held in PreparingDelete by the preDelete hook, the partition's
//     pods recreated on the current revision: see scale.go).
//   - CloneSetEventHandlerOptimization (v1.4.0-v1.8.x, openkruise/kruise#2057): pod update events
//     that change only a preNormal hook's finalizers are ignored, so the pod is not refreshed.
//   - rollouts of ReCreate CloneSets (progress.go): old pods marked specified-delete within
//     maxUnavailable, replaced from the update revision; with spec.progressDeadlineSeconds, the
//     Progressing condition as v1.9.0's calculateProgressingStatus sets it, ProgressDeadlineExceeded
//     included.
//   - in-place rollouts (inplace.go) of images, labels and annotations (env from metadata,
//     InPlaceUpdateEnvFromMetadata) and, with --feature-gates=InPlaceWorkloadVerticalScaling=true,
//     cpu and memory through the pods' resize subresource: PreparingUpdate while an inPlaceUpdate
//     hook is on the pod, then InPlaceUpdateReady=False (unless it only resizes), the
//     inplace-update-state annotation and the new spec, as v1.9.0's updatePod and
//     inplaceupdate.Update do.
//   - the SidecarSet controller (kruise_sidecarset*.go): status counts, in-place sidecar image
//     updates within maxUnavailable, paused and partition, and the update expectations whose leak
//     (a pod deleted during its update, DeletePodInSidecarUpdate) freezes the SidecarSet with
//     "matched pods has some update in flight" until the leader restarts. Pods are created
//     already injected (CreateInjectedPod): the stand-in runs no webhook.
//   - the Advanced StatefulSet and Advanced DaemonSet controllers (statefulset.go,
//     daemonset.go, each with its own informer and queue, workers.go): ordered
//     creation and a rolling update from the highest ordinal down to the partition within
//     maxUnavailable; one pod per fitting node and a rolling update within partition and
//     maxUnavailable; the status counts the check reads. v1.9.0 gives neither a progress deadline.
//
// It never completes an in-place update (kwok restarts no container), and keeps no
// ControllerRevisions or resourceVersion expectations.
package kruisemanager
