// Package watch turns file-system changes into debounced notifications,
// on fsnotify (inotify on Linux). It knows nothing of programs or
// configs: the supervisor decides what a change means.
//
// The contract:
//
//   - New(Config) watches directory trees recursively and single files,
//     and returns only once every watch is in place, so nothing that
//     happens after it is missed. Run(ctx, changed) then calls changed
//     once per debounced batch with the changed paths (absolute, sorted,
//     unique), on Run's goroutine, until ctx ends.
//   - A batch fires when the watched paths have been quiet for Debounce
//     (trailing edge), and at the latest MaxWait after its first event.
//     Debounce 0 fires as soon as the events already delivered are
//     handled. Timers come from an injected clock.Clock, so tests step
//     a fake clock instead of sleeping.
//   - Subdirectories created later are watched as they appear; what was
//     created inside them before their watch existed is reported too.
//     Symlinked directories inside a tree are not followed.
//   - Include and Exclude are globs with "**" (Glob), relative to the
//     watched directory. Editor temp files (*.swp, *~, .#*, 4913, *.tmp …)
//     and .git, .hg, .svn are always excluded (DefaultExcludes); an
//     excluded directory is never watched. With GitIgnore, what the
//     .gitignore at the top of each watched directory ignores is excluded
//     too (glob.Ignore: a subset of gitignore's rules).
//   - An inotify queue overflow (events were lost) counts as a change of
//     every watched root, and the trees are walked again for directories
//     whose creation was lost.
//   - File(ctx, path, …) is for config files: it watches the file's
//     directory, so editors that write and rename and Kubernetes ConfigMap
//     "..data" symlink swaps are seen, and calls changed only when the
//     content (read through symlinks) hashes differently than before.
//   - Every goroutine here belongs to a Run or File call, or to the
//     fsnotify watcher that Run (or Close) closes.
package watch
