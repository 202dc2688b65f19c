"""FerryMQ's configuration: the typed model and its loaders (activemq.xml, command-line flags)."""

from ferrymq.config.activemq_xml import load_config, parse_config
from ferrymq.config.bridge import JmsBridgeConfig, JmsConnectorConfig, SpringBean
from ferrymq.config.cli import DEFAULT_LISTENER, config_from_flags, parse_admin
from ferrymq.config.errors import ConfigError, Location
from ferrymq.config.model import (
    AdminConfig,
    BrokerConfig,
    IgnoredElement,
    ManagementContextConfig,
    MasterConnectorConfig,
    MessageTraceConfig,
    ServicesConfig,
    StompLimitsConfig,
    SystemUsageConfig,
    TransportConnectorConfig,
)
from ferrymq.config.network import DestinationRef, NetworkConnectorConfig
from ferrymq.config.pending import PENDING, pending_features
from ferrymq.config.persistence import (
    DatabaseLockerConfig,
    DataSourceConfig,
    JdbcPersistenceConfig,
    KahaDBConfig,
    LeaseDatabaseLockerConfig,
    LockerConfig,
    PersistenceConfig,
    SharedFileLockerConfig,
)
from ferrymq.config.policy import (
    ConditionalNetworkBridgeFilterConfig,
    DeadLetterStrategy,
    DiscardingDeadLetterStrategy,
    IndividualDeadLetterStrategy,
    PolicyEntry,
    PolicyMap,
    RedeliveryPluginConfig,
    RedeliveryPolicyConfig,
    SharedDeadLetterStrategy,
    destination_matches,
)

__all__ = [
    "DEFAULT_LISTENER",
    "PENDING",
    "AdminConfig",
    "BrokerConfig",
    "ConditionalNetworkBridgeFilterConfig",
    "ConfigError",
    "DataSourceConfig",
    "DatabaseLockerConfig",
    "DeadLetterStrategy",
    "DestinationRef",
    "DiscardingDeadLetterStrategy",
    "IgnoredElement",
    "IndividualDeadLetterStrategy",
    "JdbcPersistenceConfig",
    "JmsBridgeConfig",
    "JmsConnectorConfig",
    "KahaDBConfig",
    "LeaseDatabaseLockerConfig",
    "Location",
    "LockerConfig",
    "ManagementContextConfig",
    "MasterConnectorConfig",
    "MessageTraceConfig",
    "NetworkConnectorConfig",
    "PersistenceConfig",
    "PolicyEntry",
    "PolicyMap",
    "RedeliveryPluginConfig",
    "RedeliveryPolicyConfig",
    "ServicesConfig",
    "SharedDeadLetterStrategy",
    "SharedFileLockerConfig",
    "SpringBean",
    "StompLimitsConfig",
    "SystemUsageConfig",
    "TransportConnectorConfig",
    "config_from_flags",
    "destination_matches",
    "load_config",
    "parse_admin",
    "parse_config",
    "pending_features",
]
