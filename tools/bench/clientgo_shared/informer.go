// informer.go — the part both client-go baselines share: a ConfigMap shared informer with
// the client limits lifted, built from a kubeconfig. build-clientgo.sh copies this file next
// to the baseline's main.go (one Go package each).
package main

import (
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// configMapInformer exits 2 (naming who failed) when the kubeconfig cannot be used.
func configMapInformer(who, kubeconfig, namespace string) cache.SharedIndexInformer {
	return configMapInformerResync(who, kubeconfig, namespace, 0)
}

// configMapInformerResync: the same with client-go's resync period (0: none), which hands
// every cached object to the handlers' OnUpdate each period.
func configMapInformerResync(who, kubeconfig, namespace string, resync time.Duration) cache.SharedIndexInformer {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, who+":", err)
		os.Exit(2)
	}
	cfg.QPS = 1e6
	cfg.Burst = 1e6
	cs := kubernetes.NewForConfigOrDie(cfg)
	f := informers.NewSharedInformerFactoryWithOptions(cs, resync, informers.WithNamespace(namespace))
	return f.Core().V1().ConfigMaps().Informer()
}
