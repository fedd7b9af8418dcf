/* Promela model of the teardown protocol (docs/teardown-protocol.md, which
   says how each variable and step maps to the code). Three independent
   parts, each checked alone:

   1. Ownership: one page of one segment, two blocks, and the segment's
      owner word (state, generation). The owner thread exits (abandon); a
      freer frees both blocks from another thread, and with reclaim on free
      claims the segment by a CAS on the owner word as it read it when the
      segment is abandoned, else pushes onto the page's xthread_free (read
      head, CAS); a claimer adopts from the abandoned list under its lock
      and exits again (abandoning the segment once more if blocks are still
      out); the purge thread's cleanup holds abandoned segments claimed
      while it collects them and releases those that are empty.
   2. Purge: a segment with two page slots moving through IN_USE,
      FREE_DIRTY, PURGING, FREE_CLEAN; its owner frees both pages (the last
      one releases the segment); the purger claims dirty pages and returns
      their memory, which the OS may refuse.

   3. Late thread data (-DLATE): a thread's data set up after its exit hook
      ran, under an id no thread has, finished by another thread once the
      thread has ended (see part 3 below).

   Check (ci/teardown-model.sh):
     spin -a teardown-protocol.pml && gcc -O2 -o pan pan.c && ./pan -a          (part 1)
     spin -DPURGE -a teardown-protocol.pml && gcc -O2 -o pan pan.c && ./pan -a  (part 2)
   Planted bugs, each of which spin must report: -DPURGE -DPLANT, the purger
   lets go of a refused page before re-listing its segment
   (MI_TEARDOWN_PLANT_PURGE_RACE); -DPLANT_CLAIM, the claimer takes the
   segment off the abandoned list without its lock; -DPLANT_TAG, the claim
   on free compares the owner state and not the generation
   (MI_TEARDOWN_PLANT_SKIP_TAG). */

/* ---------------- 1. Ownership, abandon, claim, cross-thread free ---------- */

#define NONE 0      /* segment thread_id 0: abandoned, or claimed and not yet owned */
#define T_OWNER 1   /* the original owner thread */
#define C1 2        /* the claimer that adopts from the list */
#define F 3         /* the freer (it may claim on free) */
#define CLEANUP 4   /* the purge thread's cleanup, holding a segment claimed */
#define GONE 9      /* released: cached or unmapped */
#define NB 2        /* blocks, ids 1..NB; 0 is the null pointer */

/* owner states (mi_owner_state_t) */
#define RELEASED 0
#define OWNED 1
#define ABANDONED 2
#define CLAIMED 3

byte thread_id = T_OWNER;   /* segment->thread_id */
byte ostate = OWNED;        /* segment->owner: state ... */
byte ogen = 1;              /* ... and generation */
byte gen_ctr = 1;           /* mi_owner_generation (process-wide) */
byte abandonments = 0;      /* times the segment was pushed on the abandoned list */
byte used = NB;             /* page->used: handed out and not collected back */
byte head = 0;              /* page->xthread_free: top block id */
byte nxt[NB + 1];           /* block->next */
byte collected[NB + 1];     /* times each block came back to a holder's free list */
bool on_list = false;       /* on the abandoned list (under abandoned_lock) */
bool abandoned_lock = false;
byte holder = T_OWNER;      /* who believes it holds the segment */
byte done = 0;

inline lock() { atomic { !abandoned_lock -> abandoned_lock = true } }
inline unlock() { abandoned_lock = false }

/* mi_owner_cas: from the observed (os, og) to state `to` with a new
   generation; `ok` says whether it happened */
inline owner_cas(os, og, to, ok) {
  atomic {
    if
    :: ostate == os && ogen == og -> gen_ctr++; ostate = to; ogen = gen_ctr; ok = true
    :: else -> ok = false
    fi
  }
}

/* mi_owner_move: a transition only the holder makes (its CAS cannot fail) */
inline owner_move(from, to) {
  atomic {
    assert(ostate == from);
    gen_ctr++; ostate = to; ogen = gen_ctr
  }
}

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

/* mi_segment_release: only with no block outstanding, by the holder */
inline release(me) {
  assert(holder == me);
  assert(used == 0 && head == 0);
  assert(collected[1] == 1 && collected[2] == 1);
  assert(!on_list);
  atomic { thread_id = GONE; holder = GONE; gen_ctr++; ostate = RELEASED; ogen = gen_ctr }
}

/* a holder's thread exits (_mi_segments_abandon): release the segment if
   its blocks are all back, else abandon it: thread_id 0, then list it and
   move the word OWNED -> ABANDONED in one critical section */
inline exit_thread(me) {
  collect();
  if
  :: used == 0 -> release(me)
  :: else ->
     thread_id = NONE;
     holder = NONE;
     lock(); on_list = true; atomic { owner_move(OWNED, ABANDONED); abandonments++ }; unlock()
  fi
}

/* mi_tld_segment_add after a claim, under the lock (the claim unlinked it) */
inline adopt(me) {
  assert(holder == NONE);          /* exclusive: nobody else holds it */
  holder = me;
  thread_id = me;
  owner_move(CLAIMED, OWNED)
}

proctype Owner() {
  byte b;
  exit_thread(T_OWNER);
  done++
}

/* mi_free of block 1, then block 2, from a thread that did not allocate
   them: with reclaim on free, a segment of no thread (thread_id 0) whose
   owner word reads ABANDONED is claimed by one CAS from that reading
   (_mi_segment_claim_on_free), then unlinked and adopted, and the block
   freed locally; otherwise the block is pushed (_mi_free_remote). A thread
   that claimed exits at the end, like any holder. */
proctype Freer() {
  byte blk = 1;
  byte h, b, os, og, seen;
  bool ok;
  do
  :: blk <= NB ->
     assert(thread_id != GONE);   /* its block is live: the segment cannot be gone */
     if
     :: thread_id == F ->         /* it claimed earlier: a local free */
        assert(holder == F);
        collected[blk]++; assert(collected[blk] == 1); used--;
        blk++
     :: thread_id != F ->
        ok = false;
        if
        :: thread_id == NONE ->
           atomic { os = ostate; og = ogen; seen = abandonments };
           if
           :: os == ABANDONED ->  /* MI_SCHED_FREE_CLAIM_READ */
#ifdef PLANT_TAG
              /* planted: the CAS compares the state only */
              atomic {
                if
                :: ostate == os -> gen_ctr++; ostate = CLAIMED; ogen = gen_ctr; ok = true
                :: else -> ok = false
                fi
              }
#else
              owner_cas(os, og, CLAIMED, ok)
#endif
           :: else -> skip
           fi
        :: else -> skip
        fi;
        if
        :: ok ->
           /* no ABA: the claim took the abandonment it read, not a later one */
           assert(abandonments == seen);
           lock(); assert(on_list); on_list = false; adopt(F); unlock();
           collect();             /* mi_segment_adopt */
           collected[blk]++; assert(collected[blk] == 1); used--;
           blk++
        :: else ->
           h = head;              /* MI_SCHED_FREE_REMOTE_READ */
           atomic {
             if
             :: head == h ->      /* CAS succeeds: block->next = h is the current head */
                assert(thread_id != GONE);
                nxt[blk] = h;
                head = blk;
                blk++
             :: else -> skip      /* CAS fails: read again */
             fi
           }
        fi
     fi
  :: else -> break
  od;
  if
  :: thread_id == F -> exit_thread(F)
  :: else -> skip
  fi;
  done++
}

/* _mi_segments_reclaim (mi_abandoned_claim): under the lock, CAS an
   ABANDONED listed segment to CLAIMED (skip it if the CAS fails), unlink,
   adopt; then collect (mi_segment_adopt), and exit: release if its blocks
   are back, else abandon it again. */
proctype Claimer(byte me) {
  byte b, os, og;
  bool ok = false;
#ifdef PLANT_CLAIM
  /* planted: test and take without the lock and without the CAS (another
     claimer can take it too) */
  if
  :: on_list && ostate == ABANDONED -> on_list = false; ok = true
  :: else -> skip
  fi;
  if
  :: ok -> atomic { assert(holder == NONE); gen_ctr++; ostate = CLAIMED; ogen = gen_ctr };
           lock(); adopt(me); unlock()
  :: else -> skip
  fi;
#else
  lock();
  if
  :: on_list ->
     atomic { os = ostate; og = ogen };
     if
     :: os == ABANDONED -> owner_cas(os, og, CLAIMED, ok)
     :: else -> skip
     fi;
     if
     :: ok -> on_list = false; adopt(me)
     :: else -> skip
     fi
  :: else -> skip
  fi;
  unlock();
#endif
  if
  :: ok -> collect(); exit_thread(me)
  :: else -> skip
  fi;
  done++
}

/* _mi_segments_abandoned_cleanup (purge thread): under the lock, hold the
   segment CLAIMED while collecting it; release it if it is empty, else make
   it ABANDONED again. Never adopts it. */
proctype Cleanup() {
  byte b, os, og;
  bool ok = false;
  lock();
  if
  :: on_list ->
     atomic { os = ostate; og = ogen };
     if
     :: os == ABANDONED -> owner_cas(os, og, CLAIMED, ok)
     :: else -> skip
     fi;
     if
     :: ok ->
        assert(holder == NONE);
        holder = CLEANUP;
        collect();
        if
        :: used == 0 -> on_list = false; release(CLEANUP)
        :: else -> holder = NONE; owner_move(CLAIMED, ABANDONED)
        fi
     :: else -> skip
     fi
  :: else -> skip
  fi;
  unlock();
  done++
}

/* At the end no free is lost and no segment is stuck: every block came
   back, or it waits on the list of a page that still exists, and a segment
   that was not released is abandoned and listed (every thread that held it
   has exited), never left claimed. */
proctype Final() {
  byte b;
  (done == 4) ->
  assert(ostate == RELEASED || (ostate == ABANDONED && on_list && holder == NONE));
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

/* ---------------- 3. Late thread data (-DLATE) ----------------------------- */
/* Thread T allocated after its exit hook ran: its late data holds one
   segment, under the id LATE_ID that no thread has (-DPLANT_LATE_ID: T's
   own id, as before the fix), and T holds the mark. T works on the
   segment's pages (an owner's local write), then ends: with another round
   of the exit hook (it abandons the segment itself and drops the mark) or
   without (the mark tells it ended). Thread N starts on T's stack once T
   has ended, and so has T's id: it frees a block of the segment, locally if
   the segment's id is its own, else by a push; it may adopt the segment
   once abandoned. The finisher (a thread's set-up, mi_collect, the
   background thread) finishes T's exit when the mark says T ended. Every
   local write asserts that its writer holds the segment; at the end the
   late data must not be left holding it (nothing leaked). */
#define TID 1
#define LATE_ID 5
#define H_LATE 1      /* held by T's late data: T while it runs, then its finisher */
#define H_ABANDONED 2
#define H_N 3
byte late_seg_id;          /* the segment's thread_id */
byte late_holder = H_LATE;
bool late_t_running = true;
bool late_marked = true;
bool late_done = false; /* T's late data freed (by T or the finisher) */
byte late_pushed = 0;        /* blocks on the page's xthread_free */
byte late_n_done = 0;

inline local_write(who) {
  assert(late_holder == who)
}

proctype LateT() {
  local_write(H_LATE);
  if
  :: atomic { late_holder = H_ABANDONED; late_seg_id = 0; late_marked = false; late_done = true; late_t_running = false }
  :: atomic { late_t_running = false }  /* the rounds ran out: no hook */
  fi
}

proctype NewThreadOnSameStack() {
  !late_t_running;
  if
  :: late_seg_id == TID -> local_write(H_N)
  :: else -> late_pushed++
  fi;
  if
  :: atomic { late_holder == H_ABANDONED -> late_holder = H_N; late_seg_id = TID }; local_write(H_N)
  :: skip
  fi;
  late_n_done = 1
}

proctype Finisher() {
  if
  :: atomic { !late_t_running && late_marked -> late_marked = false };
     local_write(H_LATE);
     atomic { late_holder = H_ABANDONED; late_seg_id = 0; late_done = true }
  :: !late_marked -> skip
  fi
}

proctype LateFinal() {
  timeout -> assert(late_done && late_holder != H_LATE)
}

/* The parts share nothing: each is checked alone (their product only
   multiplies the states). */
init {
#ifdef LATE
#ifdef PLANT_LATE_ID
  late_seg_id = TID;
#else
  late_seg_id = LATE_ID;
#endif
  atomic {
    run LateT();
    run NewThreadOnSameStack();
    run Finisher();
    run LateFinal()
  }
#else
  state[0] = IN_USE;
  state[1] = IN_USE;
#ifndef PURGE
  atomic {
    run Owner();
    run Freer();
    run Claimer(C1);
    run Cleanup();
    run Final()
  }
#else
  atomic {
    run SegOwner();
    run Purger()
  }
#endif
#endif
}
