-- A large SQLite workload for bench/prof-real.sh: 1,000,000 rows with text,
-- an index built over them, grouping, a join and an update. Its output is
-- the same under every allocator.
create table t(a integer primary key, b text, c integer);
with recursive n(i) as (select 1 union all select i + 1 from n where i < 1000000)
insert into t select i, printf('%08x-%s', (i * 2654435761) % 4294967296, hex(zeroblob(i % 24))), i % 1000 from n;
create index t_b on t(b);
create table g as select c, count(*) as n, group_concat(substr(b, 1, 4)) as s from t group by c;
select count(*), sum(length(s)) from g;
select count(*) from t join g on t.c = g.c where t.b > '8';
update t set b = b || 'x' where a % 3 = 0;
select sum(length(b)), max(b) from t;
