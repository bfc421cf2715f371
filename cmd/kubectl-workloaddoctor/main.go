// Command kubectl-workloaddoctor is the kubectl plugin `kubectl workloaddoctor`.
package main

import (
	"os"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/cmd"
)

func main() {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	os.Exit(cmd.Execute(os.Args[1:], streams))
}
