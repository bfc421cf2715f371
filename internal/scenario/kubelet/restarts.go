package kubelet

// RestartsLabel on a pod (value "true") has kwok restart a container whose image the pod's
// spec changes, as a kubelet does on an in-place update: the container's status takes the new
// image and an imageID of it, its restartCount goes up and it runs Ready again. Without the label
// kwok restarts nothing, and an in-place update never completes.
const RestartsLabel = "scenario.workloaddoctor.test/restarts-containers"

// ContainerRestarts is the kwok stage behind RestartsLabel; scenario.ClusterOptions adds it to
// Stages.
const ContainerRestarts = `---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-container-restarted
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.podIP'
      operator: 'Exists'
    - key: '.metadata.labels["` + RestartsLabel + `"]'
      operator: 'In'
      values: ['true']
    - key: '[.spec.containers[].image] == [.status.containerStatuses[]?.image]'
      operator: 'In'
      values: ['false']
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $statuses := .status.containerStatuses }}
      containerStatuses:
      {{ range .spec.containers }}{{ $c := . }}{{ range $statuses }}{{ if eq .name $c.name }}
      - name: {{ $c.name | Quote }}
        image: {{ $c.image | Quote }}
        imageID: {{ printf "kwok://%s" $c.image | Quote }}
        ready: true
        started: true
      {{ if eq .image $c.image }}
        restartCount: {{ .restartCount }}
        state:
          running:
            startedAt: {{ dig "state" "running" "startedAt" $now . | Quote }}
      {{ else }}
        restartCount: {{ add .restartCount 1 }}
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ end }}{{ end }}{{ end }}
`
