package kruise

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// scaledPartition resolves an integer-or-percent partition against total pods, rounding a
// percentage up or down as the controller asks (intstr.GetScaledValueFromIntOrPercent). A value
// the controller cannot parse counts as no partition: it logs the error and uses 0.
func scaledPartition(raw *intOrString, total int32, roundUp bool) *int32 {
	if raw == nil {
		return nil
	}
	var n int32
	if json.Unmarshal(*raw, &n) == nil {
		return &n
	}
	var s string
	if json.Unmarshal(*raw, &s) != nil {
		return nil
	}
	pct, ok := strings.CutSuffix(s, "%")
	v, err := strconv.Atoi(pct)
	if !ok || err != nil {
		return nil
	}
	scaled := float64(v) * float64(total) / 100
	if roundUp {
		scaled = math.Ceil(scaled)
	} else {
		scaled = math.Floor(scaled)
	}
	n = int32(scaled)
	return &n
}

// cloneSetPartition is a CloneSet's partition as its controller resolves it
// (util.CalculatePartitionReplicas in kruise v1.9.0): a percentage rounds up, so any partition
// above 0% keeps a pod, and one below 100% still lets a pod of several update.
func cloneSetPartition(raw *intOrString, replicas int32) *int32 {
	p := scaledPartition(raw, replicas, true)
	if p == nil || replicas <= 1 || *p != replicas {
		return p
	}
	var s string
	if json.Unmarshal(*raw, &s) == nil && s != "100%" {
		n := replicas - 1
		return &n
	}
	return p
}
