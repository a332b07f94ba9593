package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/supervise-dev/supervise/config"
	"github.com/supervise-dev/supervise/export"
)

// exportCommand is `supervise export systemd`: the config as units of
// another engine, with a warning on stderr for every key that engine
// cannot express.
func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "write the config as another engine's files",
		Subcommands: []*cli.Command{{
			Name:  "kubernetes",
			Usage: "a Deployment per long-running program, a Job per one-shot, a Service per probed port",
			Flags: []cli.Flag{
				configFlag(),
				&cli.StringFlag{Name: "image", Required: true, Usage: "the image the containers run"},
				&cli.StringFlag{Name: "name", Usage: "the app: prefix of object names and its label (default: the config's folder name)"},
				&cli.StringFlag{Name: "namespace", Aliases: []string{"n"}, Usage: "namespace of the objects (default: kubectl's)"},
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "-", Usage: "file to write, - for stdout"},
				&cli.StringFlag{Name: "mode", Value: "workloads", Usage: "workloads (a Deployment or Job per program) or pod (every program a container of one Pod)"},
			},
			Action: func(c *cli.Context) error { return exportKubernetes(c) },
		}, {
			Name:  "systemd",
			Usage: "one unit per program (a template for instances) and a target that wants them",
			Flags: []cli.Flag{
				configFlag(),
				&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "directory to write the units into"},
				&cli.StringFlag{Name: "prefix", Usage: "unit name prefix, PREFIX-NAME.service and PREFIX.target (default: the config's folder name)"},
				&cli.IntFlag{Name: "systemd-version", Usage: "the systemd the units are for; 254 and later get RestartSteps= (default 252)"},
			},
			Action: func(c *cli.Context) error {
				return exportSystemd(c)
			},
		}},
	}
}

func exportSystemd(c *cli.Context) error {
	cfg, err := loadToExport(c)
	if err != nil {
		return err
	}
	prefix := c.String("prefix")
	if prefix == "" {
		prefix = unitPrefix(filepath.Base(cfg.Dir))
	}
	files, warns, err := export.Systemd(cfg, export.SystemdOptions{Prefix: prefix, Version: c.Int("systemd-version")})
	printWarnings(warns) // a refusal's reasons are warnings too
	if err != nil {
		return err
	}
	dir := c.String("output")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "wrote %d units to %s (%d warnings); start them with: systemctl link %s/*.service && systemctl start %s.target\n",
		len(files), dir, len(warns), dir, prefix)
	return nil
}

// unitPrefix makes a unit name part of a folder name.
func unitPrefix(s string) string {
	s = export.NamePart(s)
	if s == "" || s == "." || s == "/" {
		return "supervise"
	}
	return s
}

func exportKubernetes(c *cli.Context) error {
	cfg, err := loadToExport(c)
	if err != nil {
		return err
	}
	name := c.String("name")
	if name == "" {
		name = export.DNSLabel(filepath.Base(cfg.Dir))
		if name == "" {
			name = "supervise"
		}
	}
	mode := c.String("mode")
	if mode != "workloads" && mode != "pod" {
		return fmt.Errorf("export kubernetes: --mode is workloads or pod, not %q", mode)
	}
	data, warns, err := export.Kubernetes(cfg, export.KubernetesOptions{Image: c.String("image"), Name: name, Namespace: c.String("namespace"), Pod: mode == "pod"})
	if err != nil {
		return err
	}
	printWarnings(warns)
	if out := c.String("output"); out != "-" {
		if err := os.WriteFile(out, data, 0o644); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(os.Stderr, "wrote %s (%d warnings); apply it with: kubectl apply -f %s\n", out, len(warns), out)
		return nil
	}
	_, err = os.Stdout.Write(data)
	return err
}

// importCommand is `supervise import`: another tool's configuration as a
// supervise.toml, with a warning on stderr for what has no equivalent.
func importCommand() *cli.Command {
	out := &cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "-", Usage: "file to write, - for stdout"}
	return &cli.Command{
		Name:  "import",
		Usage: "write another tool's configuration as a supervise.toml",
		Subcommands: []*cli.Command{{
			Name:      "supervisord",
			Usage:     "the [program:x] sections of a supervisord.conf",
			ArgsUsage: "FILE",
			Flags:     []cli.Flag{out},
			Action: func(c *cli.Context) error {
				if c.Args().Len() != 1 {
					return errors.New("import supervisord: give the supervisord configuration file")
				}
				toml, warns, err := export.ImportSupervisordFile(c.Args().First())
				if err != nil {
					return err
				}
				return writeImport(c.String("output"), toml, warns)
			},
		}, {
			Name:      "process-compose",
			Usage:     "a process-compose.yaml and the .env beside it",
			ArgsUsage: "[FILE]",
			Description: "FILE defaults to the one process-compose would run here: the first of " +
				strings.Join(export.ProcessComposeFiles, ", ") + ".",
			Flags: []cli.Flag{out},
			Action: func(c *cli.Context) error {
				if c.Args().Len() > 1 {
					return errors.New("import process-compose: give at most one file")
				}
				f := c.Args().First()
				if f == "" {
					var err error
					if f, err = export.FindProcessCompose("."); err != nil {
						return err
					}
				}
				// env_file is relative to the supervise.toml written
				envFrom := "."
				if o := c.String("output"); o != "-" {
					envFrom = filepath.Dir(o)
				}
				toml, warns, err := export.ImportProcessComposeFile(f, envFrom)
				if err != nil {
					return err
				}
				return writeImport(c.String("output"), toml, warns)
			},
		}, {
			Name:      "procfile",
			Usage:     "a Procfile and its .env",
			ArgsUsage: "[PROCFILE]",
			Flags:     []cli.Flag{out},
			Action: func(c *cli.Context) error {
				f := "Procfile"
				if c.Args().Len() > 0 {
					f = c.Args().First()
				}
				cfg, err := config.Load(f)
				if err != nil {
					printConfigError(err)
					return cli.Exit("", exitUsage)
				}
				if !cfg.Procfile {
					return fmt.Errorf("import procfile: %s is not a Procfile", f)
				}
				toml, warns := export.ImportProcfile(cfg)
				return writeImport(c.String("output"), toml, warns)
			},
		}},
	}
}

func writeImport(out string, toml []byte, warns []export.Warning) error {
	printWarnings(warns)
	if out == "-" {
		_, err := os.Stdout.Write(toml)
		return err
	}
	if err := os.WriteFile(out, toml, 0o644); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s (%d warnings); check it with: supervise check -c %s\n", out, len(warns), out)
	return nil
}

// loadToExport loads the config an export reads: -c, an argument, or the
// folder's; a bad one is printed as `supervise check` prints it.
func loadToExport(c *cli.Context) (*config.Config, error) {
	file, err := findConfig(c, true)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(file)
	if err != nil {
		printConfigError(err)
		return nil, cli.Exit("", exitUsage)
	}
	return cfg, nil
}

// printWarnings writes one line per warning: String escapes what a
// config value could use to start a line of its own.
func printWarnings(warns []export.Warning) {
	for _, w := range warns {
		fmt.Fprintln(os.Stderr, "warning:", w.String())
	}
}
