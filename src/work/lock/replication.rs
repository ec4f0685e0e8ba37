//! What an `INFO replication` answer says about the primary: how many
//! replicas are online, and its replication id.

/// Replicas in state `online` in an `INFO replication` answer.
pub(super) fn online_replicas(info: &str) -> usize {
    info.lines()
        .filter(|line| {
            line.strip_prefix("slave")
                .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()) && rest.contains("state=online"))
        })
        .count()
}

/// The primary's replication id (`master_replid`), which a promotion or a
/// restart changes; empty when the answer has none.
pub(super) fn replication_id(info: &str) -> &str {
    info.lines().find_map(|line| line.strip_prefix("master_replid:")).map_or("", str::trim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_online_replicas_count() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:3\r\n\
            slave0:ip=10.0.0.2,port=6379,state=online,offset=1,lag=0\r\n\
            slave1:ip=10.0.0.3,port=6379,state=wait_bgsave,offset=0,lag=0\r\n\
            slave2:ip=10.0.0.4,port=6379,state=online,offset=1,lag=1\r\n\
            slave_read_repl_offset:1\r\nmaster_repl_offset:1\r\n";
        assert_eq!(online_replicas(info), 2);
        assert_eq!(online_replicas("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n"), 0);
    }

    #[test]
    fn the_replication_id_names_the_primary() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\
            master_replid:8c3f2a\r\nmaster_replid2:0000\r\n";
        assert_eq!(replication_id(info), "8c3f2a");
        assert_eq!(replication_id("# Replication\r\nrole:master\r\n"), "");
    }
}
