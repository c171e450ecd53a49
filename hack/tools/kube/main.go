// Command kube is the six upstream Kubernetes commands this project runs in one
// binary, as Kubernetes' former hyperkube was: it runs the command named by the
// base name of argv[0] (kube-apiserver, kube-controller-manager,
// kube-scheduler, kubelet, kube-proxy, kubectl), so hack/install-tools.sh
// installs it once under each name. One binary means one link instead of six:
// the commands share most of their packages, and linking each of them
// separately was most of the build's time. Each command starts as its own
// cmd/*/main.go starts it.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	_ "time/tzdata" // CronJob time zones (kube-apiserver, kube-controller-manager)

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	"k8s.io/component-base/logs"
	_ "k8s.io/component-base/logs/json/register"          // the JSON log format
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// servers are the commands that exit with cli.Run's code.
var servers = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kubelet":                 func() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) },
	"kube-proxy":              proxy.NewProxyCommand,
}

func main() {
	name := filepath.Base(os.Args[0])
	if name == "kubectl" {
		runKubectl()
		return
	}
	newCommand, ok := servers[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "%s: run me as one of %v (a link of that name)\n", name, commandNames())
		os.Exit(2)
	}
	os.Exit(cli.Run(newCommand()))
}

// runKubectl is cmd/kubectl/kubectl.go's main: the verbosity is set before the
// command is built, so that building it (plugins, .kuberc) can log.
func runKubectl() {
	logs.GlogSetter(kubectl.GetLogVerbosity(os.Args)) //nolint:errcheck // as upstream
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
}

func commandNames() []string {
	names := []string{"kubectl"}
	for n := range servers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
