// Package kubelet is what kwok plays of the kubelet in the scenario cluster: the kwok
// configuration documents (pod stages, deferred resizes, container restarts, served logs) that
// make a simulated pod start, run, turn Ready, restart, resize and stop the way a kubelet would,
// and the labels by which a pod or node asks for one of those behaviours.
package kubelet
