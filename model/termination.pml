/*
 * termination.pml -- Promela model of am's epoch termination detector.
 *
 * Three ranks run one or two epochs.  In an epoch a rank's main code sends
 * messages to any rank; handlers of received messages may send nested
 * messages (to any rank).  Sends are appended to a per-destination
 * coalescing buffer local to the sender and are put into the network when
 * that buffer is flushed.  end() of an epoch runs reduction waves over
 * double-buffered slots and one barrier per wave until the detector says
 * the epoch is over.  See model/README.md for what is abstracted and how to
 * run the checks (scripts/model_check.sh runs all of them).
 *
 * Configuration (spin -a -DNAME ...):
 *   DETECTOR_DEPTH        depth-limited detector with depth D (default
 *                         D=1); without it: the general four-counter one.
 *   NEPOCHS=1|2           epochs run back to back (default 1).
 *   MAIN1, MAIN2          max messages the main code sends in epoch 1 / 2
 *                         per rank (defaults 2 / 1).
 *   BUDGET1, BUDGET2      max messages (main + nested) created in epoch 1
 *                         / 2 over all ranks (defaults 4 / 2).
 *   FANOUT                max nested sends per handler run (default 2).
 *   FULL_DRAIN            end()'s drain is complete: a rank contributes only
 *                         when nothing is left locally (its incoming queue
 *                         and its buffers are empty).  Without it the drain
 *                         may stop at any point (only the buffers must be
 *                         empty), which is a superset of behaviours and is
 *                         what the safety checks use.
 *   GENMOD                barrier generation counter modulus (default 4;
 *                         2 is exact too, see README, and halves the states).
 *   MAIN_INTERLEAVED      the main code sends one message per step, with
 *                         handling and flushes between (default: one step).
 * Mutants (deliberately broken versions; scripts/model_check.sh expects
 * spin to find an error in each, except where noted):
 *   MUTANT_ONE_WAVE       general detector ends after one wave with S == H.
 *   MUTANT_NO_FLUSH       a rank may contribute while its buffers hold
 *                         messages (no flush before the contribution);
 *                         sent is still counted at flush time.
 *   MUTANT_COUNT_AT_APPEND  sent is counted when a message is appended to a
 *                         buffer, not when the buffer is flushed.  Together
 *                         with MUTANT_NO_FLUSH this is still SAFE (checked),
 *                         but end() need not return (a rank may keep its
 *                         buffer forever): caught by the termination check.
 *   MUTANT_DEPTH_OVERFLOW a handler of a level-D message sends a level-D+1
 *                         message (the user's declared depth is wrong).
 *   NO_DEPTH_GUARD        remove the "depth exceeded" assert at the send,
 *                         so the overflow has to show up (or not) as a
 *                         premature end of the epoch.
 *   MUTANT_SINGLE_SLOT    the reduction uses one slot array instead of two
 *                         (no double buffering).
 */

#define N 3                     /* ranks */

#ifndef NEPOCHS
#define NEPOCHS 1
#endif
#ifndef MAIN1
#define MAIN1 2
#endif
#ifndef MAIN2
#define MAIN2 1
#endif
#ifndef BUDGET1
#define BUDGET1 4
#endif
#ifndef BUDGET2
#define BUDGET2 2
#endif
#ifndef FANOUT
#define FANOUT 2
#endif
#ifndef GENMOD
#define GENMOD 4
#endif

#ifdef DETECTOR_DEPTH
#ifndef D
#define D 1
#endif
#define NL (D+2)                /* levels 0..D, plus D+1 for the overflow mutant */
#else
#define NL 1                    /* general detector: levels are not tracked */
#endif

#define NE 2                    /* counters are kept per epoch parity (epoch & 1) */
#define NEL (NE*NL)             /* one counter vector per rank: index e*NL + l */

#define NOTHING 255             /* "-1" for last_s / last_h */

/* ---------------------------------------------------------------- state */

/* Messages carry no payload that matters to the detector: only their
 * epoch parity e and level l.  So a buffer and a network queue are
 * multisets, represented by one count per (e,l). */
byte buf[N*N*NEL];      /* buf[(src*N+dst)*NEL + e*NL+l]: in src's buffer for dst */
byte bufn[N*N];         /* bufn[src*N+dst]: total in that buffer (redundant)      */
byte net[N*NEL];        /* net[dst*NEL + e*NL+l]: flushed to dst, not yet handled  */
byte netn[N];           /* netn[dst]: total in flight to dst (redundant)          */

/* per-rank counters, per epoch parity and level */
byte sent[N*NEL];       /* sent[r*NEL + e*NL+l]: counted when a buffer is flushed */
byte handled[N*NEL];    /* handled[r*NEL + e*NL+l]: counted when a handler is done */

/* the sum reduction: double-buffered contribution slots and one barrier */
#ifdef MUTANT_SINGLE_SLOT
#define PAR(p) 0
#else
#define PAR(p) (p)
#endif
byte slot_s[2*N*NL];    /* slot_s[(p*N+r)*NL + l] */
byte slot_h[2*N*NL];
byte slot_ep[2*N];      /* ghost: the epoch a slot was written for */
byte arrived;           /* barrier arrival counter */
byte gen;               /* barrier generation, modulo GENMOD */
/* sum over the ranks of level l of the slots of this rank's current wave */
#define SUM3(a, l) (a[(PAR(wp)*N + 0)*NL + (l)] + a[(PAR(wp)*N + 1)*NL + (l)] + a[(PAR(wp)*N + 2)*NL + (l)])

/* ghosts for the properties and the bounds */
byte outstanding[NE];   /* messages of epoch parity e created (appended) and not yet
                           completely handled: in a buffer, in the network, or with
                           their handler not finished */
byte created[NE];       /* messages of epoch parity e created, for the budget */
byte left[NE];          /* ranks that have left the epoch of parity e (ghost) */
byte ndone;             /* ranks that have left their last epoch */

#define BUDGET(e) ((e) == 1 -> BUDGET1 : BUDGET2)   /* epoch 1 has parity 1 */

/* ------------------------------------------------------------ actions */

/* Append one message of epoch parity e, level l to this rank's buffer for a
 * nondeterministically chosen destination.  Only inside atomic blocks. */
inline append(e, l) {
	if
	:: dst = 0
	:: dst = 1
	:: dst = 2
	fi;
	buf[(me*N+dst)*NEL + (e)*NL + (l)]++;
	bufn[me*N+dst]++;
#ifdef MUTANT_COUNT_AT_APPEND
	sent[me*NEL + (e)*NL + (l)]++;
#endif
	created[e]++;
	outstanding[e]++;
	printf("MSC r%d: append epoch-parity %d level %d for r%d\n", me, e, l, dst);
	dst = 0
}

/* Flush the buffer for destination d: its messages go into the network to d
 * and sent is incremented by their number. */
inline flush(d) {
	d_step {
		bufn[me*N+d] > 0 ->
		i = 0;
		do
		:: i < NEL ->
			net[d*NEL + i] = net[d*NEL + i] + buf[(me*N+d)*NEL + i];
#ifndef MUTANT_COUNT_AT_APPEND
			sent[me*NEL + i] = sent[me*NEL + i] + buf[(me*N+d)*NEL + i];
#endif
			buf[(me*N+d)*NEL + i] = 0;
			i++
		:: else -> break
		od;
		netn[d] = netn[d] + bufn[me*N+d];
		printf("MSC r%d: flush %d message(s) to r%d\n", me, bufn[me*N+d], d);
		bufn[me*N+d] = 0;
		i = 0
	}
}

#define FLUSH_ANY :: flush(0) :: flush(1) :: flush(2)

/* The guard of the contribution: all buffers of this rank are empty
 * (removed by MUTANT_NO_FLUSH), and with FULL_DRAIN nothing has arrived
 * that is not handled. */
#ifdef MUTANT_NO_FLUSH
#define BUFFERS_FLUSHED true
#else
#define BUFFERS_FLUSHED (bufn[me*N+0] == 0 && bufn[me*N+1] == 0 && bufn[me*N+2] == 0)
#endif
#ifdef FULL_DRAIN
#define DRAINED (netn[me] == 0)
#else
#define DRAINED true
#endif

/* Handle one arrived message (any epoch, any level, in any order): run its
 * handler to completion, including its nested sends, then count it.  The
 * handler is one atomic step: it only touches state private to this rank
 * (its buffers and counters), so no other rank can observe its inside. */
#define TAKE(k) :: net[me*NEL + k] > 0 -> hi = k
inline handle() {
	atomic {
		if
		TAKE(0)
		TAKE(1)
#if NEL > 2
		TAKE(2)
		TAKE(3)
#endif
#if NEL > 4
		TAKE(4)
		TAKE(5)
#endif
#if NEL > 6
		TAKE(6)
		TAKE(7)
#endif
#if NEL > 8
#error "extend TAKE for D > 2"
#endif
		fi;
		net[me*NEL + hi]--;
		netn[me]--;
		he = hi / NL;
		hl = hi % NL;
		printf("MSC r%d: handle epoch-parity %d level %d\n", me, he, hl);
		/* nested sends: same epoch as the message being handled */
		k = 0;
		do
#ifdef DETECTOR_DEPTH
		/* a handler of a level-l message sends level-(l+1) messages;
		 * level-D handlers send nothing -- unless the user lied about D */
#ifdef MUTANT_DEPTH_OVERFLOW
		:: k < FANOUT && created[he] < BUDGET(he) && hl <= D ->
#else
		:: k < FANOUT && created[he] < BUDGET(he) && hl < D ->
#endif
#ifndef NO_DEPTH_GUARD
			assert(hl + 1 <= D);      /* depth exceeded */
#endif
			append(he, hl + 1);
			k++
#else
		:: k < FANOUT && created[he] < BUDGET(he) ->
			append(he, 0);
			k++
#endif
		:: break
		od;
		handled[me*NEL + hi]++;
		outstanding[he]--;
		hi = 0; he = 0; hl = 0; k = 0
	}
}

/* --------------------------------------------------------------- ranks */

active [N] proctype rank()
{
	byte me = _pid;         /* the active ranks are pids 0..N-1 */
	byte ep = 1;            /* current epoch (1, 2); counters use ep & 1 */
	byte sends;             /* main-code sends done in this epoch */
	bit  wp;                /* parity of the current wave: slot[wp] */
	byte mygen;             /* barrier generation seen when arriving */
#ifndef DETECTOR_DEPTH
	byte last_s = NOTHING, last_h = NOTHING;
#endif
	byte tS, tH;            /* scratch: sums of one wave */
	bit  fin;               /* scratch: the detector said the epoch is over */
	byte dst, hi, he, hl, k, i, r;   /* scratch */

epoch_main:
	/* The rank's main code: 0..MAIN sends of level 0 to any ranks. */
#ifdef MAIN_INTERLEAVED
	/* one send per step, with polling (handling) and flushes between */
	do
	:: atomic {
		sends < (ep == 1 -> MAIN1 : MAIN2) && created[ep & 1] < BUDGET(ep & 1) ->
		append(ep & 1, 0);
		sends++
	   }
	:: handle()
	FLUSH_ANY
	:: break                /* main code is done: call end() */
	od;
#else
	/* all of them in one step (the appends are local to the rank; flushes
	 * and handling start in end(); see README "Abstractions") */
	atomic {
		do
		:: sends < (ep == 1 -> MAIN1 : MAIN2) && created[ep & 1] < BUDGET(ep & 1) ->
			append(ep & 1, 0);
			sends++
		:: break
		od
	};
#endif
	sends = 0;

	/* --------------------------------------------------- end() */
wave:
	/* Drain (handle arrived messages, flush buffers; the model lets the
	 * drain stop at any point unless FULL_DRAIN), then contribute this
	 * epoch's counters to wave slot[wp] and arrive at the barrier.  The
	 * contribution is enabled only when every buffer of this rank is empty,
	 * i.e. "flush all buffers" has been done. */
	do
	:: handle()
	FLUSH_ANY
	:: atomic {
		BUFFERS_FLUSHED && DRAINED ->
		i = 0;
		do
		:: i < NL ->
			slot_s[(PAR(wp)*N + me)*NL + i] = sent[me*NEL + (ep & 1)*NL + i];
			slot_h[(PAR(wp)*N + me)*NL + i] = handled[me*NEL + (ep & 1)*NL + i];
			i++
		:: else -> break
		od;
		i = 0;
		slot_ep[PAR(wp)*N + me] = ep;
		printf("MSC r%d: contribute epoch %d to slot %d: sent %d handled %d (level 0)\n", me, ep, PAR(wp),
		       slot_s[(PAR(wp)*N + me)*NL], slot_h[(PAR(wp)*N + me)*NL]);
#ifdef DETECTOR_DEPTH
		printf("MSC r%d:   level 1: sent %d handled %d; level 2: sent %d handled %d\n", me,
		       slot_s[(PAR(wp)*N + me)*NL + 1], slot_h[(PAR(wp)*N + me)*NL + 1],
		       slot_s[(PAR(wp)*N + me)*NL + 2], slot_h[(PAR(wp)*N + me)*NL + 2]);
#endif
		mygen = gen;
		arrived++;
		if
		:: arrived == N -> arrived = 0; gen = (gen + 1) % GENMOD
		:: else
		fi
	   };
	   break
	od;

	/* wait for the wave to complete, still handling and flushing */
	do
	:: handle()
	FLUSH_ANY
	:: atomic {
		gen != mygen ->
		/* the barrier cannot move on twice without this rank */
		assert(gen == (mygen + 1) % GENMOD);
		mygen = 0;
		/* every slot of this wave was written in this epoch */
		r = 0;
		do
		:: r < N -> assert(slot_ep[PAR(wp)*N + r] == ep); r++
		:: else -> break
		od;
		r = 0;
#ifdef DETECTOR_DEPTH
		/* the epoch ends at the first wave in which
		 * sum sent[l] == sum handled[l] for every level l <= D */
		fin = 1;
		i = 0;
		do
		:: i <= D ->
			tS = SUM3(slot_s, i);
			tH = SUM3(slot_h, i);
			if
			:: tS != tH -> fin = 0
			:: else
			fi;
			i++
		:: else -> break
		od;
		i = 0;
#else
		/* four counters: S == H and both equal to the previous wave's */
		tS = SUM3(slot_s, 0);
		tH = SUM3(slot_h, 0);
#ifdef MUTANT_ONE_WAVE
		fin = (tS == tH);
#else
		fin = (tS == tH && tS == last_s && tH == last_h);
#endif
		last_s = tS;
		last_h = tH;
#endif
#ifdef DETECTOR_DEPTH
		printf("MSC r%d: wave read slot %d: every level balanced: %d\n", me, PAR(wp), fin);
#else
		printf("MSC r%d: wave read slot %d: S %d H %d, ends: %d\n", me, PAR(wp), tS, tH, fin);
#endif
		tS = 0; tH = 0;
		wp = 1 - wp;
		if
		:: fin ->
			/* SAFETY: end() returns: every message of this epoch,
			 * anywhere, has been completely handled */
			printf("MSC r%d: end() of epoch %d returns, %d message(s) of it outstanding\n", me, ep, outstanding[ep & 1]);
			assert(outstanding[ep & 1] == 0);
			/* Leave the epoch.  Its counters (parity slot ep & 1) are
			 * reset, ready for epoch ep+2 (and so that dead values do
			 * not multiply the states of the next epoch). */
			i = 0;
			do
			:: i < NL ->
				sent[me*NEL + (ep & 1)*NL + i] = 0;
				handled[me*NEL + (ep & 1)*NL + i] = 0;
				i++
			:: else -> break
			od;
			i = 0;
#ifndef DETECTOR_DEPTH
			last_s = NOTHING;
			last_h = NOTHING;
#endif
			/* ghost: once every rank has left the epoch, its budget
			 * counter is dead too */
			left[ep & 1]++;
			if
			:: left[ep & 1] == N -> left[ep & 1] = 0; created[ep & 1] = 0
			:: else
			fi;
			ep++;
			if
			:: ep > NEPOCHS -> ndone++
			:: else
			fi
		:: else
		fi
	   };
	   break
	od;

	if
	:: fin && ep <= NEPOCHS -> fin = 0; goto epoch_main   /* begin the next epoch at once */
	:: fin && ep > NEPOCHS -> fin = 0                     /* done */
	:: else -> goto wave                                  /* next wave */
	fi
}

/* When every rank has left its last epoch nothing may be left anywhere. */
active proctype finished()
{
	ndone == N ->
	assert(outstanding[0] == 0 && outstanding[1] == 0)
}
