package scenario

// KubeletLabel on a pod names what kwok's kubelet meets starting it; see KwokStages.
const (
	KubeletLabel            = "scenario.workloaddoctor.test/kubelet"
	KubeletErrImagePull     = "ErrImagePull"
	KubeletCrashLoopBackOff = "CrashLoopBackOff"
)

// KwokStages are the pod stages kwok plays. kwok before v0.8 clears every finalizer when it
// deletes a pod, which no kubelet does; these stages behave like a kubelet: a pod runs (its
// containers' status reporting the resources allocated to them) and becomes Ready, and a pod
// being deleted is deleted with grace period 0 once "its containers stopped", leaving any
// finalizer for its owner. A pod labelled KubeletLabel gets the statuses a kubelet
// writes when its image cannot be pulled (ErrImagePull: Pending, waiting in ImagePullBackOff) or
// its container exits at start (CrashLoopBackOff: Running, not Ready, restarted, last exit 1).
// Node stages stay kwok's defaults.
const KwokStages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
` + podStarting + `      operator: 'DoesNotExist'
` + podStarted + `      phase: Running
` + podPlaced + podConditionsReady + podContainer + `        ready: true
        started: true
        restartCount: 0
        resources: {{ toJson .resources }}
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-failing
` + podStarting + `      operator: 'In'
      values: ['` + KubeletErrImagePull + `']
` + podStarted + `      phase: Pending
` + podPlaced + podConditionsNotReady + podContainer + `        imageID: ""
        ready: false
        started: false
        restartCount: 0
        state:
          waiting:
            reason: ImagePullBackOff
            message: {{ printf "Back-off pulling image %q" .image | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-crash-looping
` + podStarting + `      operator: 'In'
      values: ['` + KubeletCrashLoopBackOff + `']
` + podStarted + `      phase: Running
` + podPlaced + podConditionsNotReady + podContainer + `        ready: false
        started: false
        restartCount: 5
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: {{ printf "back-off 2m40s restarting failed container=%s" .name | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-stopped
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  next:
    delete: true
`

// The pieces the starting stages share. podStarting selects a pod not being deleted that has no
// IP yet (each stage gives it one, so it applies once), and ends with the KubeletLabel key whose
// operator the stage adds.
const (
	podStarting = podNotDeleted + `    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.metadata.labels["` + KubeletLabel + `"]'
`
	// podNotDeleted begins a pod stage's spec: it selects pods not being deleted, and the stage
	// adds its own requirements.
	podNotDeleted = `spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
`
	podStarted = `  next:
    statusTemplate: |
      {{ $now := Now }}
`
	podPlaced = `      startTime: {{ $now | Quote }}
      hostIP: {{ NodeIPWith .spec.nodeName | Quote }}
      podIP: {{ PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) | Quote }}
      conditions:
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
`
	podConditionsReady = `      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
`
	podContainer = `      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
`
	podConditionsNotReady = `      - type: ContainersReady
        status: "False"
        reason: ContainersNotReady
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "False"
        reason: ContainersNotReady
        lastTransitionTime: {{ $now | Quote }}
`
)
