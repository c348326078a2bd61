// The client-go baseline for the informer benchmarks (tools/bench/run.sh): a shared informer
// for ConfigMaps, built against the client-go vendored in Debian's kubernetes source tree
// (tools/bench/build-clientgo.sh). It does what bin/godis-informer plus a subscriber do:
// list, watch, cache, and hand every change to a handler.
//
// Protocol with bin/bench on stdout: "synced" once the cache has synced (after a GC, so the
// RSS read then is the cache's), then with -count N "done <events> <ns first→last>" after N
// handler calls; it exits when stdin closes.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"k8s.io/client-go/tools/cache"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig path")
	namespace := flag.String("namespace", "", "namespace (default all)")
	count := flag.Int64("count", 0, "handler calls to wait for after the sync")
	flag.Parse()
	inf := configMapInformer("clientgo", *kubeconfig, *namespace)

	var synced int32
	var n int64
	var first, last int64
	done := make(chan struct{})
	seen := func() {
		if atomic.LoadInt32(&synced) == 0 {
			return
		}
		now := time.Now().UnixNano()
		if atomic.CompareAndSwapInt64(&first, 0, now) {
		}
		atomic.StoreInt64(&last, now)
		if atomic.AddInt64(&n, 1) == *count {
			close(done)
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { seen() },
		UpdateFunc: func(old, obj interface{}) { seen() },
		DeleteFunc: func(obj interface{}) { seen() },
	})
	stop := make(chan struct{})
	go inf.Run(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		os.Exit(1)
	}
	runtime.GC()
	debug.FreeOSMemory()
	atomic.StoreInt32(&synced, 1)
	fmt.Println("synced")
	if *count > 0 {
		<-done
		fmt.Printf("done %d %d\n", atomic.LoadInt64(&n), atomic.LoadInt64(&last)-atomic.LoadInt64(&first))
	}
	io.Copy(io.Discard, os.Stdin)
	close(stop)
}
