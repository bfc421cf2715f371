package kubelet

// Label on a pod names what kwok's kubelet meets starting it; see Stages.
const (
	Label            = "scenario.workloaddoctor.test/kubelet"
	ErrImagePull     = "ErrImagePull"
	CrashLoopBackOff = "CrashLoopBackOff"
	// ReadinessProbeFailing: the containers run and their readiness probe never passes.
	ReadinessProbeFailing = "ReadinessProbeFailing"
)

// Stages are the pod stages kwok plays. kwok before v0.8 clears every finalizer when it
// deletes a pod, which no kubelet does; these stages behave like a kubelet: a pod runs (its
// containers' status reporting the resources allocated to them) and becomes Ready once every
// readiness gate's condition is True, and a pod being deleted is deleted with
// grace period 0 once "its containers stopped", leaving any finalizer for its owner. Ready follows
// the pod's containers and readiness gates whenever they change (pod-readiness), with the
// kubelet's reasons and messages (GeneratePodReadyCondition, pkg/kubelet/status/generate.go):
// ContainersNotReady, else ReadinessGatesNotReady. A pod labelled Label gets the statuses
// a kubelet writes when its image cannot be pulled (ErrImagePull: Pending, waiting in
// ImagePullBackOff), its container exits at start (CrashLoopBackOff: Running, not Ready,
// restarted, last exit 1) or its readiness probe fails (ReadinessProbeFailing: Running, the
// container running but not ready, and the kubelet's Unhealthy event). A pod labelled
// StopsAtGraceLabel stops only when its grace period runs out.
// Node stages stay kwok's defaults.
const Stages = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-running
` + podStarting + `      operator: 'DoesNotExist'
` + podStarted + `      phase: Running
` + podPlaced + podConditionsContainersReady + podReadyCondition + podContainer + `        ready: true
        resources: {{ toJson .resources }}
` + podContainerStarted + `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-readiness
` + podNotDeleted + `    - key: '.status.phase'
      operator: 'In'
      values: ['Running']
    - key: '` + podReadyDisagrees + `'
      operator: 'In'
      values: ['true']
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
` + podReadyCondition + `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-readiness-probe-failing
` + podStarting + `      operator: 'In'
      values: ['` + ReadinessProbeFailing + `']
  next:
    event:
      type: Warning
      reason: Unhealthy
      message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'
    statusTemplate: |
      {{ $now := Now }}
      phase: Running
` + podPlaced + podConditionsNotReady + podContainer + `        ready: false
` + podContainerStarted + `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-image-pull-failing
` + podStarting + `      operator: 'In'
      values: ['` + ErrImagePull + `']
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
      values: ['` + CrashLoopBackOff + `']
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
` + podDeleted + `      values: ['false']
  next:
    delete: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-stopped-at-grace-period
` + podDeleted + `      values: ['true']
  delay:
    durationMilliseconds: 0
    durationFrom:
      expressionFrom: '.metadata.deletionTimestamp'
  next:
    delete: true
`

// StopsAtGraceLabel on a pod (value "true") has kwok stop its containers only when the pod's
// grace period runs out, as a kubelet does for a process that ignores SIGTERM or a preStop hook
// that takes the whole period: the pod stays Terminating, as it was, until its
// deletionTimestamp, and is deleted then. Without it kwok stops a pod's containers at once.
const StopsAtGraceLabel = "scenario.workloaddoctor.test/stops-at-grace-period"

// podDeleted selects a pod being deleted and ends with whether it is labelled
// StopsAtGraceLabel, whose values the stage adds.
const podDeleted = `spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
    - key: '.metadata.labels["` + StopsAtGraceLabel + `"] == "true"'
      operator: 'In'
`

// The pieces the starting stages share. podStarting selects a pod not being deleted that has no
// IP yet (each stage gives it one, so it applies once), and ends with the Label key whose
// operator the stage adds.
const (
	podStarting = podNotDeleted + `    - key: '.status.podIP'
      operator: 'DoesNotExist'
    - key: '.metadata.labels["` + Label + `"]'
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
	podConditionsContainersReady = `      - type: ContainersReady
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
`
	// podReadyCondition is the Ready condition the kubelet derives: False ContainersNotReady
	// while a container status says not ready, else False ReadinessGatesNotReady while a
	// readiness gate's condition is missing or not True, else True. Starting a pod, the
	// containers have no status yet and are made ready by the same patch.
	podReadyCondition = `      {{ $containers := list }}
      {{ range .status.containerStatuses }}{{ if not .ready }}{{ $containers = append $containers .name }}{{ end }}{{ end }}
      {{ $gates := list }}
      {{ range $g := .spec.readinessGates }}
      {{ $status := "" }}
      {{ range $.status.conditions }}{{ if eq .type $g.conditionType }}{{ $status = .status }}{{ end }}{{ end }}
      {{ if eq $status "" }}{{ $gates = append $gates (printf "corresponding condition of pod readiness gate %q does not exist." $g.conditionType) }}
      {{ else if ne $status "True" }}{{ $gates = append $gates (printf "the status of pod readiness gate %q is not \"True\", but %s" $g.conditionType $status) }}{{ end }}
      {{ end }}
      - type: Ready
      {{ if $containers }}
        status: "False"
        reason: ContainersNotReady
        message: {{ printf "containers with unready status: [%s]" (join " " $containers) | Quote }}
      {{ else if $gates }}
        status: "False"
        reason: ReadinessGatesNotReady
        message: {{ join ", " $gates | Quote }}
      {{ else }}
        status: "True"
        reason: null
        message: null
      {{ end }}
        lastTransitionTime: {{ $now | Quote }}
`
	// podReadyDisagrees selects a running pod whose Ready condition (status, reason, message) is
	// not what its containers and readiness gates say: the same rule and words as
	// podReadyCondition, so a gate that turns True while another stays False is told too.
	podReadyDisagrees = `(reduce (.status.conditions[]?) as $c ({}; .[$c.type] = $c.status)) as $st` +
		` | [.status.containerStatuses[]? | select(.ready != true) | .name] as $uc` +
		` | [.spec.readinessGates[]?.conditionType | if $st[.] == null then "corresponding condition of pod readiness gate \"\(.)\" does not exist."` +
		` elif $st[.] != "True" then "the status of pod readiness gate \"\(.)\" is not \"True\", but \($st[.])" else empty end] as $ug` +
		` | (if ($uc | length) > 0 then {status: "False", reason: "ContainersNotReady", message: "containers with unready status: [\($uc | join(" "))]"}` +
		` elif ($ug | length) > 0 then {status: "False", reason: "ReadinessGatesNotReady", message: ($ug | join(", "))}` +
		` else {status: "True", reason: null, message: null} end)` +
		` != ([.status.conditions[]? | select(.type == "Ready") | {status, reason, message}] | first)`
	podContainer = `      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
`
	// podContainerStarted ends the status of a container that started and runs, and the range
	// over the containers.
	podContainerStarted = `        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
`
	podConditionsNotReady = `      {{ $names := list }}{{ range .spec.containers }}{{ $names = append $names .name }}{{ end }}
      - type: ContainersReady
        status: "False"
        reason: ContainersNotReady
        message: {{ printf "containers with unready status: [%s]" (join " " $names) | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: "False"
        reason: ContainersNotReady
        message: {{ printf "containers with unready status: [%s]" (join " " $names) | Quote }}
        lastTransitionTime: {{ $now | Quote }}
`
)
