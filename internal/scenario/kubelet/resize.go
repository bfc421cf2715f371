package kubelet

// FullNodeLabel on a pod (value "true") has kwok play, for the pod, the kubelet of a full
// node: its other pods hold 15 of its 16 CPUs, so a resize that asks for more CPU than is left is
// deferred (see ResizeDeferred). The pod starts as any other (pod-running reports the
// resources the kubelet allocated in the containers' status).
const FullNodeLabel = "scenario.workloaddoctor.test/full-node"

// The CPU of the scenario's nodes (builder.node) in millicores, all their kubelets can allocate,
// and what a full node's other pods hold of it.
const (
	NodeMilliCPU     = "16000"
	fullNodeMilliCPU = "15000"
)

// ResizeDeferred is the kwok stage behind FullNodeLabel; scenario.ClusterOptions adds it to
// Stages. When the pod's spec asks for resources other than those allocated (a resize
// through the resize subresource, which the apiserver admits up to the node's allocatable) and
// its cpu requests do not fit beside the other pods', the kubelet defers the resize: it reports
// PodResizePending reason Deferred with its admission's message ("Node didn't have enough
// resource: cpu, requested: <millicores>, used: <millicores>, capacity: <millicores>",
// Kubernetes 1.33+) and keeps the old resources in the containers' status. Requests are read in
// the canonical forms the apiserver stores ("500m", "2").
const ResizeDeferred = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-resize-deferred
` + podNotDeleted + `    - key: '.status.podIP'
      operator: 'Exists'
    - key: '.metadata.labels["` + FullNodeLabel + `"]'
      operator: 'In'
      values: ['true']
    - key: '` + resizeDeferred + `'
      operator: 'In'
      values: ['true']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $cpu := 0 }}
      {{ range .spec.containers }}{{ with .resources.requests }}{{ with .cpu }}
      {{ if hasSuffix "m" . }}{{ $cpu = add $cpu (trimSuffix "m" .) }}{{ else }}{{ $cpu = add $cpu (mul . 1000) }}{{ end }}
      {{ end }}{{ end }}{{ end }}
      conditions:
      - type: PodResizePending
        status: "True"
        reason: Deferred
        message: {{ printf "Node didn't have enough resource: cpu, requested: %d, used: %s, capacity: %s" $cpu "` + fullNodeMilliCPU + `" "` + NodeMilliCPU + `" | Quote }}
        lastProbeTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
`

// resizeDeferred selects a pod whose spec asks for resources other than those allocated, whose
// cpu requests do not fit beside the other pods', and that does not yet report the pending resize.
const resizeDeferred = `([.spec.containers[].resources] != [.status.containerStatuses[]?.resources]) and ` +
	`(([.spec.containers[].resources.requests.cpu // "0" | if endswith("m") then rtrimstr("m") | tonumber else tonumber * 1000 end] | add) + ` +
	fullNodeMilliCPU + ` > ` + NodeMilliCPU + `) and ` +
	`([.status.conditions[]? | select(.type == "PodResizePending")] | length == 0)`
