/* Promela model of the teardown protocol (docs/teardown-protocol.md, which
   says how each variable and step maps to the code). Two independent parts,
   run together:

   1. Ownership: one page of one segment, two blocks; the owner thread
      exits (abandon), a freer frees both blocks from another thread (the
      xthread_free push: read head, CAS), two claimers adopt from the
      abandoned list, the purge thread's cleanup releases abandoned segments
      that are empty.
   2. Purge: a segment with two page slots moving through IN_USE,
      FREE_DIRTY, PURGING, FREE_CLEAN; its owner frees both pages (the last
      one releases the segment); the purger claims dirty pages and returns
      their memory, which the OS may refuse.

   Check (ci/teardown-model.sh):
     spin -a teardown-protocol.pml && gcc -O2 -o pan pan.c && ./pan -a          (part 1)
     spin -DPURGE -a teardown-protocol.pml && gcc -O2 -o pan pan.c && ./pan -a  (part 2)
   With -DPURGE -DPLANT the purger lets go of a refused page before re-listing its
   segment (MI_TEARDOWN_PLANT_PURGE_RACE), and with -DPLANT_CLAIM claimers
   take segments off the abandoned list without its lock: spin must report
   a violation for each. */

/* ---------------- 1. Ownership, abandon, claim, cross-thread free ---------- */

#define NONE 0      /* segment thread_id 0: abandoned (on the list) */
#define T_OWNER 1   /* the original owner thread */
#define C1 2        /* claimers */
#define C2 3
#define GONE 9      /* released: cached or unmapped */
#define NB 2        /* blocks, ids 1..NB; 0 is the null pointer */

byte thread_id = T_OWNER;   /* segment->thread_id */
byte used = NB;             /* page->used: handed out and not collected back */
byte head = 0;              /* page->xthread_free: top block id */
byte nxt[NB + 1];           /* block->next */
byte collected[NB + 1];     /* times each block came back to the owner's free list */
bool on_list = false;       /* on the abandoned list (under abandoned_lock) */
bool abandoned_lock = false;
byte holder = T_OWNER;      /* who believes it owns the segment */
byte done = 0;

inline lock() { atomic { !abandoned_lock -> abandoned_lock = true } }
inline unlock() { abandoned_lock = false }

/* _mi_page_collect: take the whole list with one exchange, walk it */
inline collect() {
  atomic {
    b = head;
    head = 0;
  }
  do
  :: b != 0 ->
     collected[b]++;
     assert(collected[b] == 1);  /* freed exactly once */
     used--;
     b = nxt[b]
  :: else -> break
  od
}

/* mi_segment_release: only with no block outstanding */
inline release() {
  assert(used == 0 && head == 0);
  assert(collected[1] == 1 && collected[2] == 1);
  thread_id = GONE;
  holder = GONE
}

proctype Owner() {
  byte b;
  /* _mi_heap_free_all_of_thread: collect, then _mi_segments_abandon */
  collect();
  if
  :: used == 0 -> release()
  :: else ->
     thread_id = NONE;          /* atomic_store thread_id 0 */
     holder = NONE;
     lock(); on_list = true; unlock()  /* mi_abandoned_push */
  fi;
  done++
}

/* _mi_free_remote for block `blk`: the freer never owns the segment, so it
   reads an owner that is not itself and pushes (read head, CAS). */
proctype Freer() {
  byte blk = 1;
  byte h;
  do
  :: blk <= NB ->
     assert(thread_id != GONE);   /* its block is live: the page cannot be gone */
     h = head;                    /* MI_SCHED_FREE_REMOTE_READ */
     atomic {
       if
       :: head == h ->            /* CAS succeeds: block->next = h is the current head */
          assert(thread_id != GONE);
          nxt[blk] = h;
          head = blk;
          blk++
       :: else -> skip            /* CAS fails: read again */
       fi
     }
  :: else -> break
  od;
  done++
}

/* _mi_segments_reclaim: pop under the lock, become owner, collect; keep it
   (collecting now and then) until its blocks are back, then free the page,
   which releases the segment. */
proctype Claimer(byte me) {
  byte b;
  bool mine = false;
#ifdef PLANT_CLAIM
  /* planted: test and take without the lock (two claimers can both win) */
  if
  :: on_list -> mine = true
  :: else -> skip
  fi;
  on_list = false;
#else
  lock();
  if
  :: on_list -> on_list = false; mine = true
  :: else -> skip
  fi;
  unlock();
#endif
  if
  :: mine ->
     assert(holder == NONE);       /* exclusive: nobody else owns it */
     holder = me;
     thread_id = me;               /* mi_tld_segment_add */
     do
     :: collect();
        if
        :: used == 0 -> release(); break
        :: else -> skip
        fi
     od
  :: else -> skip
  fi;
  done++
}

/* _mi_segments_abandoned_cleanup (purge thread): under the lock, collect
   and release the segment if it is empty; never adopts it. */
proctype Cleanup() {
  byte b;
  lock();
  if
  :: on_list ->
     assert(holder == NONE);
     collect();
     if
     :: used == 0 -> on_list = false; release()
     :: else -> skip
     fi
  :: else -> skip
  fi;
  unlock();
  done++
}

/* At the end no free is lost: every block came back, or it waits on the
   list of a page that still exists (its next holder collects it). */
proctype Final() {
  byte b;
  (done == 5) ->
  b = 1;
  do
  :: b <= NB ->
     assert(collected[b] == 1 || thread_id != GONE);
     b++
  :: else -> break
  od
}

/* ---------------- 2. Purge: page states of one segment --------------------- */

#define IN_USE 0
#define FREE_DIRTY 1
#define PURGING 2
#define FREE_CLEAN 3

byte state[2];              /* page->state of slots 0 and 1 */
bool purge_lock = false;
bool in_purge_list = false; /* segment->in_purge_list */
bool seg_released = false;

inline plock() { atomic { !purge_lock -> purge_lock = true } }
inline punlock() { purge_lock = false }

/* the owner frees slot 1, then slot 0 (its last page): release */
proctype SegOwner() {
  byte i;
  bool purging;
  /* _mi_segment_page_free -> _mi_purge_schedule_page (slot 1) */
  plock(); state[1] = FREE_DIRTY; in_purge_list = true; punlock();
  /* may take the slot back: mi_page_claim_slot, CAS FREE_* -> IN_USE,
     waiting out PURGING; then free it again */
  if
  :: atomic { (state[1] == FREE_DIRTY || state[1] == FREE_CLEAN) -> state[1] = IN_USE };
     plock(); state[1] = FREE_DIRTY; in_purge_list = true; punlock()
  :: skip
  fi;
  /* the last page: schedule it, then release the segment */
  plock(); state[0] = FREE_DIRTY; in_purge_list = true; punlock();
  /* _mi_purge_unlink_segment: off the list and no page PURGING, checked in
     one critical section, again after every wait */
  do
  :: plock();
     in_purge_list = false;
     purging = (state[0] == PURGING || state[1] == PURGING);
     punlock();
     if
     :: !purging -> break
     :: else -> skip
     fi
  od;
  atomic {
    assert(!in_purge_list && state[0] != PURGING && state[1] != PURGING);
    seg_released = true
  }
}

/* _mi_purge_run: claim under the lock, return memory outside it */
proctype Purger() {
  byte i;
  bool mine[2];
  bool dirty_left;
  byte rounds = 0;
  do
  :: rounds < 2 ->
     rounds++;
     plock();
     if
     :: in_purge_list ->
        assert(!seg_released);    /* the list never holds a released segment */
        mine[0] = false; mine[1] = false;
        i = 0;
        do
        :: i < 2 ->
           atomic {                  /* CAS FREE_DIRTY -> PURGING (under the lock) */
             if
             :: state[i] == FREE_DIRTY -> state[i] = PURGING; mine[i] = true
             :: else -> skip
             fi
           };
           i++
        :: else -> break
        od;
        in_purge_list = false     /* no dirty page left (all claimed) */
     :: else -> mine[0] = false; mine[1] = false
     fi;
     punlock();
     i = 0;
     do
     :: i < 2 ->
        if
        :: mine[i] ->
           assert(!seg_released);
           if
           :: state[i] = FREE_CLEAN   /* purged */
           :: /* refused: FREE_DIRTY again, segment listed again */
#ifdef PLANT
              state[i] = FREE_DIRTY;
              plock(); assert(!seg_released); in_purge_list = true; punlock()
#else
              plock(); state[i] = FREE_DIRTY; in_purge_list = true; punlock()
#endif
           fi
        :: else -> skip
        fi;
        i++
     :: else -> break
     od
  :: else -> break
  od
}

/* The two parts share nothing: each is checked alone (their product only
   multiplies the states). */
init {
  state[0] = IN_USE;
  state[1] = IN_USE;
#ifndef PURGE
  atomic {
    run Owner();
    run Freer();
    run Claimer(C1);
    run Claimer(C2);
    run Cleanup();
    run Final()
  }
#else
  atomic {
    run SegOwner();
    run Purger()
  }
#endif
}
