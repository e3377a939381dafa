//! The CLI's `help <command>` texts: each `do_*` docstring of bmv2's
//! runtime_CLI.py and sswitch_CLI.py (with the "[DEPRECATED!]" wrapping its
//! legacy `table_indirect_*` commands get), for the engine to print.

/// `(command, help text)`, in runtime_CLI.py's order.
pub const HELP: &[(&str, &str)] = &[
    ("shell", "Run a shell command"),
    (
        "show_tables",
        "List tables defined in the P4 program: show_tables",
    ),
    (
        "show_actions",
        "List actions defined in the P4 program: show_actions",
    ),
    (
        "table_show_actions",
        "List one table's actions as per the P4 program: table_show_actions <table_name>",
    ),
    (
        "table_info",
        "Show info about a table: table_info <table_name>",
    ),
    (
        "table_set_default",
        "Set default action for a match table: table_set_default <table name> <action name> <action parameters>",
    ),
    (
        "table_reset_default",
        "Reset default entry for a match table: table_reset_default <table name>",
    ),
    (
        "table_num_entries",
        "Return the number of entries in a match table (direct or indirect): table_num_entries <table name>",
    ),
    (
        "table_clear",
        "Clear all entries in a match table (direct or indirect), but not the default entry: table_clear <table name>",
    ),
    (
        "table_add",
        "Add entry to a match table: table_add <table name> <action name> <match fields> => <action parameters> [priority]",
    ),
    (
        "table_set_timeout",
        "Set a timeout in ms for a given entry; the table has to support timeouts: table_set_timeout <table_name> <entry handle> <timeout (ms)>",
    ),
    (
        "table_modify",
        "Add entry to a match table: table_modify <table name> <action name> <entry handle> [action parameters]",
    ),
    (
        "table_delete",
        "Delete entry from a match table: table_delete <table name> <entry handle>",
    ),
    (
        "act_prof_create_member",
        "Add a member to an action profile: act_prof_create_member <action profile name> <action_name> [action parameters]",
    ),
    (
        "table_indirect_create_member",
        "[DEPRECATED!] Add a member to an indirect match table: table_indirect_create_member <table name> <action_name> [action parameters]\nUse 'act_prof_create_member' instead",
    ),
    (
        "act_prof_delete_member",
        "Delete a member in an action profile: act_prof_delete_member <action profile name> <member handle>",
    ),
    (
        "table_indirect_delete_member",
        "[DEPRECATED!] Delete a member in an indirect match table: table_indirect_delete_member <table name> <member handle>\nUse 'act_prof_delete_member' instead",
    ),
    (
        "act_prof_modify_member",
        "Modify member in an action profile: act_prof_modify_member <action profile name> <action_name> <member_handle> [action parameters]",
    ),
    (
        "table_indirect_modify_member",
        "[DEPRECATED!] Modify member in an indirect match table: table_indirect_modify_member <table name> <action_name> <member_handle> [action parameters]\nUse 'act_prof_modify_member' instead",
    ),
    (
        "table_indirect_add",
        "Add entry to an indirect match table: table_indirect_add <table name> <match fields> => <member handle> [priority]",
    ),
    (
        "table_indirect_add_with_group",
        "Add entry to an indirect match table: table_indirect_add <table name> <match fields> => <group handle> [priority]",
    ),
    (
        "table_indirect_delete",
        "Delete entry from an indirect match table: table_indirect_delete <table name> <entry handle>",
    ),
    (
        "table_indirect_set_default",
        "Set default member for indirect match table: table_indirect_set_default <table name> <member handle>",
    ),
    (
        "table_indirect_set_default_with_group",
        "Set default group for indirect match table: table_indirect_set_default <table name> <group handle>",
    ),
    (
        "table_indirect_reset_default",
        "Reset default entry for indirect match table: table_indirect_reset_default <table name>",
    ),
    (
        "act_prof_create_group",
        "Add a group to an action pofile: act_prof_create_group <action profile name>",
    ),
    (
        "table_indirect_create_group",
        "[DEPRECATED!] Add a group to an indirect match table: table_indirect_create_group <table name>\nUse 'act_prof_create_group' instead",
    ),
    (
        "act_prof_delete_group",
        "Delete a group from an action profile: act_prof_delete_group <action profile name> <group handle>",
    ),
    (
        "table_indirect_delete_group",
        "[DEPRECATED!] Delete a group: table_indirect_delete_group <table name> <group handle>\nUse 'act_prof_delete_group' instead",
    ),
    (
        "act_prof_add_member_to_group",
        "Add member to group in an action profile: act_prof_add_member_to_group <action profile name> <member handle> <group handle>",
    ),
    (
        "table_indirect_add_member_to_group",
        "[DEPRECATED!] Add member to group: table_indirect_add_member_to_group <table name> <member handle> <group handle>\nUse 'act_prof_add_member_to_group' instead",
    ),
    (
        "act_prof_remove_member_from_group",
        "Remove member from group in action profile: act_prof_remove_member_from_group <action profile name> <member handle> <group handle>",
    ),
    (
        "table_indirect_remove_member_from_group",
        "[DEPRECATED!] Remove member from group: table_indirect_remove_member_from_group <table name> <member handle> <group handle>\nUse 'act_prof_remove_member_from_group' instead",
    ),
    (
        "mc_mgrp_create",
        "Create multicast group: mc_mgrp_create <group id>",
    ),
    (
        "mc_mgrp_destroy",
        "Destroy multicast group: mc_mgrp_destroy <group id>",
    ),
    (
        "mc_node_create",
        "Create multicast node: mc_node_create <rid> <space-separated port list> [ | <space-separated lag list> ]",
    ),
    (
        "mc_node_update",
        "Update multicast node: mc_node_update <node handle> <space-separated port list> [ | <space-separated lag list> ]",
    ),
    (
        "mc_node_associate",
        "Associate node to multicast group: mc_node_associate <group handle> <node handle>",
    ),
    (
        "mc_node_dissociate",
        "Dissociate node from multicast group: mc_node_associate <group handle> <node handle>",
    ),
    (
        "mc_node_destroy",
        "Destroy multicast node: mc_node_destroy <node handle>",
    ),
    (
        "mc_set_lag_membership",
        "Set lag membership of port list: mc_set_lag_membership <lag index> <space-separated port list>",
    ),
    ("mc_dump", "Dump entries in multicast engine"),
    (
        "load_new_config_file",
        "Load new json config: load_new_config_file <path to .json file>",
    ),
    (
        "swap_configs",
        "Swap the 2 existing configs, need to have called load_new_config_file before",
    ),
    (
        "meter_array_set_rates",
        "Configure rates for an entire meter array: meter_array_set_rates <name> <rate_1>:<burst_1> <rate_2>:<burst_2> ...",
    ),
    (
        "meter_set_rates",
        "Configure rates for a meter: meter_set_rates <name> <index> <rate_1>:<burst_1> <rate_2>:<burst_2> ...\nRate uses units/microsecond and burst uses units where units is bytes or packets",
    ),
    (
        "meter_get_rates",
        "Retrieve rates for a meter: meter_get_rates <name> <index>",
    ),
    (
        "counter_read",
        "Read counter value: counter_read <name> <index>",
    ),
    (
        "counter_write",
        "Write counter value: counter_write <name> <index> <packets> <bytes>",
    ),
    ("counter_reset", "Reset counter: counter_reset <name>"),
    (
        "register_read",
        "Read register value: register_read <name> [index]",
    ),
    (
        "register_write",
        "Write register value: register_write <name> <index> <value>",
    ),
    (
        "register_reset",
        "Reset all the cells in the register array to 0: register_reset <name>",
    ),
    (
        "table_dump_entry",
        "Display some information about a table entry: table_dump_entry <table name> <entry handle>",
    ),
    (
        "act_prof_dump_member",
        "Display some information about a member: act_prof_dump_member <action profile name> <member handle>",
    ),
    (
        "table_dump_member",
        "Display some information about a member: table_dump_member <table name> <member handle>",
    ),
    (
        "act_prof_dump_group",
        "Display some information about a group: table_dump_group <action profile name> <group handle>",
    ),
    (
        "table_dump_group",
        "Display some information about a group: table_dump_group <table name> <group handle>",
    ),
    (
        "act_prof_dump",
        "Display entries in an action profile: act_prof_dump <action profile name>",
    ),
    (
        "table_dump",
        "Display entries in a match-table: table_dump <table name>",
    ),
    (
        "table_dump_entry_from_key",
        "Display some information about a table entry: table_dump_entry_from_key <table name> <match fields> [priority]",
    ),
    (
        "show_pvs",
        "List parser value sets defined in the P4 program: show_pvs",
    ),
    (
        "pvs_add",
        "Add a value to a parser value set: pvs_add <pvs_name> <value>\nbmv2 will not report an error if the value already exists.",
    ),
    (
        "pvs_remove",
        "Remove a value from a parser value set: pvs_remove <pvs_name> <value>\nbmv2 will not report an error if the value does not exist.",
    ),
    (
        "pvs_get",
        "Print all values from a parser value set: pvs_get <pvs_name>\nValues are displayed in no particular order, one per line.",
    ),
    (
        "pvs_clear",
        "Remove all values from a parser value set: pvs_clear <pvs_name>",
    ),
    (
        "port_add",
        "Add a port to the switch (behavior depends on device manager used): port_add <iface_name> <port_num> [pcap_path]",
    ),
    (
        "port_remove",
        "Removes a port from the switch (behavior depends on device manager used): port_remove <port_num>",
    ),
    (
        "show_ports",
        "Shows the ports connected to the switch: show_ports",
    ),
    (
        "switch_info",
        "Show some basic info about the switch: switch_info",
    ),
    (
        "reset_state",
        "Reset all state in the switch (table entries, registers, ...), but P4 config is preserved: reset_state",
    ),
    (
        "write_config_to_file",
        "Retrieves the JSON config currently used by the switch and dumps it to user-specified file",
    ),
    (
        "serialize_state",
        "Serialize the switch state and dumps it to user-specified file",
    ),
    (
        "set_crc16_parameters",
        "Change the parameters for a custom crc16 hash: set_crc16_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>",
    ),
    (
        "set_crc32_parameters",
        "Change the parameters for a custom crc32 hash: set_crc32_parameters <name> <polynomial> <initial remainder> <final xor value> <reflect data?> <reflect remainder?>",
    ),
    (
        "set_toeplitz_hash_key",
        "Set Toeplitz hash key: set_toeplitz_hash_key <name> <key in hex string>",
    ),
    (
        "set_queue_depth",
        "Set depth of one / all egress queue(s): set_queue_depth <nb_pkts> [<egress_port> [<priority>]]",
    ),
    (
        "set_queue_rate",
        "Set rate of one / all egress queue(s): set_queue_rate <rate_pps> [<egress_port> [<priority>]]",
    ),
    (
        "mirroring_add",
        "Add mirroring session to unicast port: mirroring_add <mirror_id> <egress_port>",
    ),
    (
        "mirroring_add_mc",
        "Add mirroring session to multicast group: mirroring_add_mc <mirror_id> <mgrp>",
    ),
    (
        "mirroring_delete",
        "Delete mirroring session: mirroring_delete <mirror_id>",
    ),
    (
        "mirroring_get",
        "Display mirroring session: mirroring_get <mirror_id>",
    ),
    (
        "get_time_elapsed",
        "Get time elapsed (in microseconds) since the switch started: get_time_elapsed",
    ),
    (
        "get_time_since_epoch",
        "Get time elapsed (in microseconds) since the switch clock's epoch: get_time_since_epoch",
    ),
];

/// The text `help COMMAND` prints; `None` where bmv2 prints `*** No help on
/// COMMAND` (unknown commands, and `greet` and `EOF`, which have none).
pub fn help_text(command: &str) -> Option<&'static str> {
    HELP.iter().find(|(c, _)| *c == command).map(|(_, t)| *t)
}
