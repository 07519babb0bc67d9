"""`kafkalite topics list|describe|create|alter|delete` on any Kafka cluster."""

from __future__ import annotations

from dataclasses import asdict

import click

from kafkalite.admin import ClientSettings, Cluster
from kafkalite.admin import topics as ops
from kafkalite.cli._cluster import cluster_command, output_option, parse_configs, print_json
from kafkalite.cli._render import print_table


@click.group()
def topics() -> None:
    """List, inspect, create, change and delete topics.

    \b
    Examples:
      kafkalite topics list -b localhost:9092
      kafkalite topics describe orders --output json
      kafkalite topics create orders -p 3 -c retention.ms=86400000
      kafkalite topics alter orders -c retention.ms=3600000 --delete-config cleanup.policy -p 6
      kafkalite topics delete orders
    """


@topics.command("list")
@cluster_command
@output_option
@click.option("--internal", is_flag=True, help="Include internal topics such as __consumer_offsets.")
def list_topics(settings: ClientSettings, output: str, internal: bool) -> None:
    """List topics with their partition and replica counts."""
    found = ops.list_topics(Cluster.connect(settings), include_internal=internal)
    if output == "json":
        print_json([asdict(topic) for topic in found])
        return
    print_table(
        None, ["TOPIC", "PARTITIONS", "REPLICAS"], [(t.name, t.partitions, t.replication_factor) for t in found]
    )


@topics.command()
@cluster_command
@output_option
@click.argument("topic")
def describe(settings: ClientSettings, output: str, topic: str) -> None:
    """Partitions (leader, replicas, start and end offsets, messages) and the configs set on TOPIC."""
    described = ops.describe_topic(Cluster.connect(settings), topic)
    if output == "json":
        document = asdict(described)
        for partition, info in zip(document["partitions"], described.partitions, strict=True):
            partition["messages"] = info.messages
        document["messages"] = described.messages
        print_json(document)
        return
    click.echo(f"Topic {described.name}: {len(described.partitions)} partition(s), {described.messages} message(s)")
    print_table(
        None,
        ["PARTITION", "LEADER", "REPLICAS", "ISR", "START", "END", "MESSAGES"],
        [
            (
                p.partition,
                p.leader,
                ",".join(map(str, p.replicas)),
                ",".join(map(str, p.isr)),
                p.start_offset,
                p.end_offset,
                p.messages,
            )
            for p in described.partitions
        ],
    )
    if described.configs:
        print_table("Configs set on the topic", ["CONFIG", "VALUE"], sorted(described.configs.items()))
    else:
        click.echo("Configs: all defaults")


@topics.command()
@cluster_command
@click.argument("topic")
@click.option("-p", "--partitions", default=1, show_default=True, type=click.IntRange(1, 100_000))
@click.option("-r", "--replication-factor", default=-1, type=click.IntRange(-1, 32_767), help="-1: broker default.")
@click.option("-c", "--config", "configs", multiple=True, metavar="KEY=VALUE", help="Topic config. Repeatable.")
@click.option("--if-not-exists", is_flag=True, help="Succeed quietly when the topic is already there.")
def create(
    settings: ClientSettings,
    topic: str,
    partitions: int,
    replication_factor: int,
    configs: tuple[str, ...],
    if_not_exists: bool,
) -> None:
    """Create TOPIC with -p partitions and -c configs."""
    config = parse_configs(configs)
    cluster = Cluster.connect(settings)
    if if_not_exists and topic in cluster.refresh().topics:
        return
    ops.create_topic(cluster, topic, partitions, replication_factor, config)
    click.echo(f"Created topic {topic} with {partitions} partition(s)")


@topics.command()
@cluster_command
@click.argument("topic")
@click.option("-c", "--config", "configs", multiple=True, metavar="KEY=VALUE", help="Set a config. Repeatable.")
@click.option("--delete-config", multiple=True, metavar="KEY", help="Back to the default. Repeatable.")
@click.option("-p", "--partitions", type=click.IntRange(1, 100_000), help="Grow to this many partitions.")
def alter(
    settings: ClientSettings,
    topic: str,
    configs: tuple[str, ...],
    delete_config: tuple[str, ...],
    partitions: int | None,
) -> None:
    """Change TOPIC's configs (others stay as they are) or add partitions."""
    config = parse_configs(configs)
    if not config and not delete_config and partitions is None:
        raise click.UsageError("nothing to change: give -c KEY=VALUE, --delete-config KEY or -p N")
    ops.alter_topic(
        Cluster.connect(settings), topic, set_configs=config, delete_configs=delete_config, partitions=partitions
    )
    click.echo(f"Altered topic {topic}")


@topics.command()
@cluster_command
@click.argument("topic_names", metavar="TOPIC...", nargs=-1, required=True)
def delete(settings: ClientSettings, topic_names: tuple[str, ...]) -> None:
    """Delete one or more topics and their data."""
    ops.delete_topics(Cluster.connect(settings), topic_names)
    click.echo(f"Deleted topic(s) {', '.join(topic_names)}")
