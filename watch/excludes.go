package watch

// defaultExcludes are what editors and version control write beside the
// files people edit: vim swap files and its "4913" write test, backups,
// emacs lock and autosave files, temporary files, and repository metadata.
var defaultExcludes = []string{
	"*.swp", "*.swo", "*.swx", "*~", ".#*", "#*#", "4913", "*.tmp",
	".git", ".hg", ".svn",
}

// DefaultExcludes returns the patterns every Watcher ignores on top of
// Config.Exclude.
func DefaultExcludes() []string {
	return append([]string(nil), defaultExcludes...)
}
